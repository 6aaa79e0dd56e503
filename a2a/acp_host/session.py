"""One held session of a hosted ACP agent: the loop that does what its task asks, turn by
turn.

The loop reads the task (one snapshot) whenever it is nudged — the supervisor's bell, its
poll, the agent's own messages — and does what the task's state asks:
- WORKING with a wakeup not served or a user message not handed over: a turn
  (a2a.acp_host.turns): hand the next user message to the agent as `session/prompt`
  (marked consumed BEFORE it is sent: never sent twice), or pass a resume on with
  `session/resume` (a2a.acp_host.pauses); one message per turn, each in order;
- paused by a client: the agent hears of it as it can (a2a.acp_host.pauses);
- ended (canceled, failed...): cancel any turn, answer any permission as cancelled, stop.

Here: the loop, the agent's session opened (new, or taken up again after a takeover or a
restart), and the agent's process ending. Its other parts, each in its own module: the
turns (a2a.acp_host.turns), the agent's process and connection
(a2a.acp_host.agent_process), what the agent says, recorded in the order it said it
(a2a.acp_host.recorder), its permission requests, asked as input requests
(a2a.acp_host.permission_requests), pauses and resumes (a2a.acp_host.pauses), and the
agent's process stopped while idle, started again by the next message (a2a.acp_host.idle).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from acp import RequestError
from acp import schema as s

from a2a import conf, services
from a2a.acp_host import config, store
from a2a.acp_host.agent_process import AgentGone, AgentProcess, describe_exit
from a2a.acp_host.client import HostClient
from a2a.acp_host.idle import IdleStop
from a2a.acp_host.pauses import Pauses
from a2a.acp_host.permission_requests import PermissionRequests
from a2a.acp_host.recorder import Recorder
from a2a.acp_host.turns import Turns
from a2a.errors import TaskError
from a2a.lifecycle import PAUSED, TERMINAL, State, TransitionRefused
from a2a.runtime import faults, leases
from a2a.runtime.executor import announce_release
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.validation import ValidationFailed

REFUSED = (TaskError, TransitionRefused)  # the services said no (the task moved meanwhile)

log = logging.getLogger(__name__)

IDLE_SECONDS = 5.0  # an idle session re-reads its task this often without a ring


class HostedRun:
    """The session of task `task_id`, held by supervisor `me` until the task ends."""

    def __init__(self, task_id: str, agent: config.HostedAgent, me: str) -> None:
        self.task_id = task_id
        self.agent = agent
        self.me = me
        self.actor = services.Actor("agent", agent.skill_id)
        self.nudge = asyncio.Event()
        self.row: Any = None
        self.agent_process = AgentProcess(task_id, agent)
        self.turns = Turns(self)
        self.recorder = Recorder(self)
        self.permissions = PermissionRequests(self)
        self.pauses = Pauses(self)
        self.idle = IdleStop(self)
        self.finished = False
        self.letting_go = False  # it hands its session back (not a takeover, if renew asks)

    # ----- the loop -----------------------------------------------------------------

    async def main(self) -> None:
        try:
            self.row = await in_db(store.session)(self.task_id)
            while not self.finished:
                self.nudge.clear()
                try:
                    await self.step()
                except Exception as exc:
                    if not faults.is_infrastructure(exc):
                        raise
                    # the database went away: the agent and its turn live on; look again
                    log.warning("task %s: database fault (%s)", self.task_id, exc)
                    await asyncio.sleep(1.0)  # its connections were closed (faults.guarded)
                    continue
                if self.finished:
                    break
                # during a turn the task is watched for pauses and cancels every poll; an
                # idle session waits for the bell (the supervisor nudges it), re-reading
                # now and then in case a ring was lost
                busy = self.turns.running or self.recorder.held
                wait = conf.ACP_HOST.poll_seconds if busy else self.idle.wait(IDLE_SECONDS)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.nudge.wait(), wait)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("hosted session of task %s failed", self.task_id)
        finally:
            await self.stop_process()
            self.letting_go = True
            with contextlib.suppress(Exception):
                await in_db(store.let_go)(self.task_id, self.me)

    async def step(self) -> None:
        snap = await in_db(store.snapshot)(self.task_id, self.row.consumed)
        if snap is None or snap.state in TERMINAL:
            await self.end(snap)
            return
        agent = self.agent_process
        if agent.has_exited() or (not self.turns.running and agent.is_disconnected()):
            await self.exited()  # between turns too: restarted before a message is consumed
            return
        await self.recorder.retry_held(snap.state)
        await self.permissions.follow(snap.state)
        if snap.state == State.INPUT_REQUIRED and self.permissions.orphaned(snap.input_request):
            await self.take_up_question(snap.input_request)
            return
        susp = snap.suspension
        if snap.state in PAUSED and susp is not None and susp.id != self.row.acted_on:
            await self.pauses.on_pause(susp)
        if self.turns.running:
            self.idle.touch()
            await self.turns.watch()
            return
        await self.recorder.flush_text()
        # a message not handed over is work even if the counts say served (a lease
        # written so by a version that let a turn serve messages it did not prompt)
        if snap.state in leases.RUNNABLE and (
            snap.wakeups != snap.served
            or snap.next_message is not None
            or self.permissions.answer is not None
        ):
            self.idle.touch()  # work waits (its turn may wait for a lapsed run lease)
            await self.turns.next()
        else:
            await self.idle.check(snap)  # idle long enough: its process is stopped

    async def end(self, snap: store.Snapshot | None) -> None:
        """The task ended (canceled, failed, completed by someone): the agent stops."""
        self.permissions.withdraw()
        await self.turns.stop()
        self.finished = True

    async def take_up_question(self, request: dict[str, Any]) -> None:
        """A permission question left open by the supervisor that held this session before
        (killed: the agent's request died with its process): asked again once the agent's
        session is taken up (a2a.acp_host.permission_requests). An agent that cannot be
        started ends the task, as it would for a turn."""
        try:
            await self.permissions.take_up(request)
        except Exception as exc:
            if faults.is_infrastructure(exc):
                raise
            await self.cannot_start(exc, None)

    async def release(self, served: int | None) -> bool:
        """Let the run lease go (a turn served `served` wakeups, or none started). True
        when the task woke up meanwhile (a message came during the turn): another turn."""
        again = await in_db(leases.release)(self.task_id, served, self.me)
        if not again:
            await in_db(announce_release)(self.task_id)
        self.nudge.set()
        return again

    # ----- the agent's session ----------------------------------------------------------

    async def ensure_session(self) -> None:
        if self.agent_process.started:
            return
        await self.start_process()
        row = self.row
        cwd = self.agent_process.cwd()
        if not row.session_id:
            await self.new_session(cwd)
            return
        # a session this host had before: this process is new (takeover, or a restart)
        if row.turn_open:
            await self.note(
                "turn_lost",
                "the previous host of this session stopped during a turn: the rest of that "
                "turn is lost, and its prompt is not sent again",
            )
            await in_db(store.end_turn)(row)
        caps = row.capabilities or {}
        taken = {"sessionId": row.session_id, "cwd": cwd, "mcpServers": []}
        how, why = "", "the agent can neither resume nor load a session"
        try:
            if self.pauses.can_resume():
                await self.agent_process.request("session/resume", taken, "resume")
                how = "session/resume"
            elif caps.get("loadSession"):
                self.recorder.muted = True  # its replay is history we recorded already
                try:
                    await self.agent_process.request("session/load", taken, "load")
                    await self.recorder.drain()
                finally:
                    self.recorder.muted = False
                how = "session/load"
        except RequestError as exc:  # e.g. an agent that kept its sessions in memory only
            why = f"the agent refused to take the session up ({exc.code}: {exc})"
        if not how:
            await self.new_session(cwd)
        if await self.idle.note_woken(how, why):
            return  # its process had been stopped idle: started again, not taken over
        if not how:
            await self.note(
                "new_session",
                f"{why}: a new session was started, without the earlier conversation",
            )
            return
        row.takeovers += 1
        await in_db(store.save)(row, "takeovers")
        await self.note("takeover", f"the session was taken up again with {how}")

    async def new_session(self, cwd: str) -> None:
        answer = await self.agent_process.request(
            "session/new", {"cwd": cwd, "mcpServers": []}, "new"
        )
        self.row.session_id = s.NewSessionResponse.model_validate(answer).session_id
        await in_db(store.save)(self.row, "session_id")

    async def start_process(self) -> None:
        # Our own routes on the SDK's router (a2a.acp_sdk): the seed's
        # session/await_resumption, and the two it has typed routes for, which would copy
        # `_meta` keys over their typed parameters (`_meta: {"options": …}` replacing the
        # options), as its agent-side routes did for the ACP door.
        routes = [
            ("session/await_resumption", self.pauses.park, "request"),
            ("session/request_permission", self.permissions.on_request, "request"),
            ("session/update", self.on_update, "notification"),
        ]
        caps = await self.agent_process.start(HostClient(self), routes, self.turns.heard)
        self.row.capabilities = caps
        await in_db(store.save)(self.row, "capabilities")

    async def on_update(self, params: Any) -> None:
        """session/update: queued before any await (arrival order is kept), then written."""
        note = s.SessionNotification.model_validate(params)
        if note.session_id == self.row.session_id or not self.row.session_id:
            self.recorder.receive(note.update)
            await self.recorder.drain()

    # ----- the agent's process ending ---------------------------------------------------

    async def stop_process(self, *, kill: bool = False) -> None:
        if kill:
            self.agent_process.kill()
            if self.turns.running:
                return  # the turn ends with the process; the loop records it
        await self.agent_process.close()

    async def cannot_start(self, exc: BaseException, served: int | None) -> None:
        """The agent could not be started or its session opened: the task ends saying why,
        rather than the agent being started again and again."""
        what = "stalled" if isinstance(exc, AgentGone) and exc.stalled else "exited"
        if isinstance(exc, AgentGone):  # its message says how: exit code or signal, stderr
            detail = f"the agent could not be started: {exc}"[:1500]
            await self.note(what, detail)
        else:
            detail = f"the agent could not be started: {type(exc).__name__}: {exc}"[:1500]
            tail = self.agent_process.stderr_tail()
            await self.note(what, detail + (f"; its last words on stderr: {tail}" if tail else ""))
        await self.stop_process(kill=True)
        await self.give_up(detail)
        await self.release(served)

    async def exited(self) -> None:
        """The agent's process is gone. During a turn the task fails (the turn's work is
        lost and its prompt is never sent twice); between turns the next turn starts it
        again (taking the session up with session/resume or session/load)."""
        code, broke = await self.agent_process.wait_exit()
        in_turn = self.turns.running or self.row.turn_open
        self.turns.abandon()
        await self.recorder.drain()
        await self.recorder.flush_text()
        await self.stop_process()
        self.permissions.withdraw()
        detail = f"the agent's process {describe_exit(code)}"
        if broke:
            detail = (
                "the connection to the agent broke (it wrote something that is not a JSON-RPC "
                "message, or closed its output), so its process was stopped"
            )
        tail = self.agent_process.stderr_tail()
        said = f"; its last words on stderr: {tail}" if tail else ""
        await self.note("exited", detail + (" during a turn" if in_turn else "") + said)
        if in_turn:
            await in_db(store.end_turn)(self.row)
            await self.give_up(f"{detail} during a turn")
            await self.release(self.turns.served)

    async def give_up(self, reason: str) -> None:
        """End the task: failed when it was working, cancelled when it waited (for an
        answer, or paused): the agent behind it is gone."""
        state = await in_db(store.task_state)(self.task_id)
        act = services.fail_task if state == State.WORKING else services.cancel_task
        with contextlib.suppress(*REFUSED):
            await in_db(act)(self.task_id, actor=self.actor, reason=reason[:2000])

    async def note(self, what: str, detail: str) -> None:
        detail = detail.replace("\x00", "")  # e.g. from its stderr: not storable
        with contextlib.suppress(*REFUSED, ValidationFailed):
            await in_db(services.note_host)(
                self.task_id, actor=self.actor, what=what, detail=detail
            )
