"""A hosted session that costs nothing while idle: its agent's process stopped after a
while, and started again by the next message.

An agent's process holds 40-65 MB whether it works or waits for a message; a review that
left a few sessions open kept them all. A held session (a2a.acp_host.session) whose agent
has done nothing for the agent's idle limit (`idleSeconds`, else
TASKDECK_ACP_HOST_IDLE_SECONDS; 0: never) — no turn in flight, no permission asked or
held, no session/suspend in flight, no message waiting, nothing heard from the agent — has
its process stopped (stdin closed, then terminated, then killed: the SDK's way), and the
timeline says so (`idle_stopped`, a host note that does not end the task's idle: the
dashboard still reads "Idle — waiting for your next message"). The task does not change.

The next message (the dashboard's message box, A2A, the ACP door) or a resume is a turn
like any other (a2a.acp_host.turns), whose `ensure_session` starts the agent again and
takes its session up: `session/resume` when the agent offers it (no replay),
`session/load` (its replay not recorded twice), else a new agent session. The timeline
says which (`woken`, or `new_session`: "new agent session: the agent cannot reload its
history"), and the message is answered. The stop is kept on the session's row
(`idle_stopped_at`), so a supervisor that took the session over meanwhile says "started
again", not "took over".
"""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import TYPE_CHECKING

from django.utils import timezone

from a2a.acp_host import store
from a2a.lifecycle import TERMINAL
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun

MIN_WAIT_SECONDS = 0.05  # the loop's shortest wait before it looks again


class IdleStop:
    """When the agent of one held session was last busy, and its stop when idle too long."""

    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.busy_at = asyncio.get_running_loop().time()

    def limit(self) -> float:
        return self.run.agent.idle_limit()

    def touch(self) -> None:
        """The session is busy now: the idle time starts again."""
        self.busy_at = asyncio.get_running_loop().time()

    def busy(self, snap: store.Snapshot) -> bool:
        """Anything that needs the agent's process now, or soon."""
        run = self.run
        suspending = run.pauses.suspending
        return (
            run.turns.running  # output held for a pause is the recorder's, not the agent's
            or run.permissions.busy
            or (suspending is not None and not suspending.done())
            or snap.next_message is not None
            or snap.wakeups != snap.served
        )

    def seconds_left(self) -> float | None:
        """Until the process is stopped (None: never — no process, or no limit)."""
        limit = self.limit()
        if limit <= 0 or not self.run.agent_process.started:
            return None
        since = max(self.busy_at, self.run.turns.last_heard)
        return max(0.0, since + limit - asyncio.get_running_loop().time())

    def wait(self, default: float) -> float:
        """How long the loop may sleep before it looks again: not past the stop."""
        left = self.seconds_left()
        return default if left is None else max(MIN_WAIT_SECONDS, min(default, left))

    async def check(self, snap: store.Snapshot) -> None:
        """The loop's look between turns: stop the agent if it has been idle long enough."""
        if snap.state in TERMINAL or self.busy(snap):
            self.touch()
            return
        left = self.seconds_left()
        if left is None or left > 0:
            return
        await self.stop()

    async def stop(self) -> None:
        """Noted first (a database fault here leaves the process running, to be stopped at
        the next look), then kept on the row, then the process stopped."""
        run = self.run
        await run.note(
            "idle_stopped",
            f"the agent was idle for {self.limit():g} s: its process was stopped to free its "
            "memory; the task waits as before, and its next message starts the agent again "
            "and takes its session up",
        )
        run.row.idle_stopped_at = timezone.now()
        await in_db(store.save)(run.row, "idle_stopped_at")
        await run.stop_process()
        self.touch()

    async def note_woken(self, how: str, why: str) -> bool:
        """After `ensure_session` started a process for a session that has one: True (and
        noted) when that session's process had been stopped idle, so the caller notes no
        takeover. `how`: "session/resume" or "session/load", or "" when a new agent
        session was started (`why`: why the old one could not be taken up)."""
        run = self.run
        stopped = run.row.idle_stopped_at
        if stopped is None:
            return False
        run.row.idle_stopped_at = None
        await in_db(store.save)(run.row, "idle_stopped_at")
        at = stopped.astimezone(UTC).strftime("%H:%M:%S UTC")
        if how:
            await run.note(
                "woken",
                f"the agent's process, stopped idle at {at}, was started again for the next "
                f"message, and its session taken up with {how}",
            )
        else:
            await run.note(
                "new_session",
                f"new agent session: the agent cannot reload its history ({why}); its process, "
                f"stopped idle at {at}, was started again for the next message without the "
                "earlier conversation",
            )
        return True
