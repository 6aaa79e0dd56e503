"""One held session of a hosted ACP agent: the loop that does what its task asks, turn by
turn.

The loop reads the task (one snapshot) whenever it is nudged — the supervisor's bell, its
poll, the agent's own messages — and does what the task's state asks:
- WORKING with a wakeup not served: hand the next user message to the agent as
  `session/prompt` (marked consumed BEFORE it is sent: never sent twice), or pass a
  resume on with `session/resume` (a2a.acp_host.pauses);
- paused by a client: the agent hears of it as it can (a2a.acp_host.pauses);
- ended (canceled, failed...): cancel any turn, answer any permission as cancelled, stop.

Its parts, each in its own module: the agent's process and connection
(a2a.acp_host.agent_process), what the agent says, recorded in the order it said it
(a2a.acp_host.recorder), its permission requests, asked as input requests
(a2a.acp_host.permission_requests), and pauses and resumes (a2a.acp_host.pauses).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from acp import RequestError
from acp import schema as s

from a2a import services
from a2a.acp_host import config, store
from a2a.acp_host.agent_process import AgentGone, AgentProcess
from a2a.acp_host.client import HostClient
from a2a.acp_host.pauses import Pauses
from a2a.acp_host.permission_requests import PermissionRequests
from a2a.acp_host.recorder import Recorder
from a2a.errors import TaskError
from a2a.formats import text_of
from a2a.lifecycle import PAUSED, TERMINAL, State, TransitionRefused
from a2a.runtime import faults, leases
from a2a.runtime.executor import announce_release
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.validation import ValidationFailed

REFUSED = (TaskError, TransitionRefused)  # the services said no (the task moved meanwhile)

log = logging.getLogger(__name__)

IDLE_SECONDS = 5.0  # an idle session re-reads its task this often without a ring
TEXT_FLUSH_SECONDS = 1.0  # during a turn, gathered text is written at least this often
STOP_GRACE_SECONDS = 5.0  # after session/cancel of a stalled turn, before the process is killed


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
        self.turn: asyncio.Task | None = None
        self.turn_served = 0
        self.recorder = Recorder(self)
        self.permissions = PermissionRequests(self)
        self.pauses = Pauses(self)
        self.last_heard = 0.0
        self.cancel_sent_at: float | None = None
        self.finished = False

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
                busy = self.turn is not None or self.recorder.held
                wait = config.setting("POLL_SECONDS") if busy else IDLE_SECONDS
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.nudge.wait(), wait)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("hosted session of task %s failed", self.task_id)
        finally:
            await self.stop_process()
            with contextlib.suppress(Exception):
                await in_db(store.let_go)(self.task_id, self.me)

    async def step(self) -> None:
        snap = await in_db(store.snapshot)(self.task_id, self.row.consumed)
        if snap is None or snap.state in TERMINAL:
            await self.end(snap)
            return
        agent = self.agent_process
        if agent.has_exited() or (self.turn is None and agent.is_disconnected()):
            await self.exited()  # between turns too: restarted before a message is consumed
            return
        await self.recorder.retry_held(snap.state)
        await self.permissions.follow(snap.state)
        susp = snap.suspension
        if snap.state in PAUSED and susp is not None and susp.id != self.row.acted_on:
            await self.pauses.on_pause(susp)
        if self.turn is not None:
            await self.watch_turn()
            return
        await self.recorder.flush_text()
        if snap.state in leases.RUNNABLE and snap.wakeups != snap.served:
            await self.next_turn(snap)

    async def end(self, snap: store.Snapshot | None) -> None:
        """The task ended (canceled, failed, completed by someone): the agent stops."""
        self.permissions.withdraw()
        if self.turn is not None and not self.turn.done():
            await self.cancel_turn("")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.turn), STOP_GRACE_SECONDS)
        if self.turn is not None:
            self.turn.cancel()
            self.turn = None
            await in_db(store.end_turn)(self.row)
        self.finished = True

    # ----- turns ----------------------------------------------------------------------

    async def next_turn(self, snap: store.Snapshot) -> None:
        served = await in_db(leases.claim)(self.task_id, self.me)
        if served is None:
            return  # not runnable after all, or a turn lease still held (a dead holder's)
        try:
            if snap.state == State.SUBMITTED:
                await in_db(services.start_task)(self.task_id, actor=self.actor)
            elif snap.last_resumed is not None:  # ends "resumed, waiting for a worker"
                await in_db(services.note_pickup)(self.task_id, actor=self.actor)
        except REFUSED:
            await self.release(served)  # it moved meanwhile (cancelled, paused): look again
            return
        try:
            await self.ensure_session()
        except Exception as exc:
            if faults.is_infrastructure(exc):
                await in_db(leases.release)(self.task_id, None, self.me)
                raise
            await self.cannot_start(exc, served)
            return
        last = snap.last_resumed
        if (
            last is not None
            and last.id != self.row.resumed_to_agent
            and self.pauses.resumes_to_agent(last)
        ):
            self.row.resumed_to_agent = last.id
            await in_db(store.save)(self.row, "resumed_to_agent")
            await self.start_turn(self.pauses.pass_resume(last), served, None)
        elif snap.next_message is not None:
            msg = snap.next_message
            await self.start_turn(self.prompt(msg), served, msg.seq)
        else:
            await self.release(served)

    async def prompt(self, msg: Any) -> str:
        return await self.agent_process.prompt(self.row.session_id, text_of(msg.parts) or "")

    async def start_turn(self, work: Any, served: int, consumed: int | None) -> None:
        if not await in_db(store.start_turn)(self.row, consumed, self.me):
            work.close()  # never sent: another supervisor holds the session now
            await in_db(leases.release)(self.task_id, None, self.me)
            self.finished = True
            return
        self.turn_served = served
        self.last_heard = asyncio.get_running_loop().time()
        self.cancel_sent_at = None
        self.recorder.new_turn()
        self.turn = asyncio.ensure_future(work)
        self.turn.add_done_callback(lambda _t: self.nudge.set())

    async def watch_turn(self) -> None:
        assert self.turn is not None
        if not self.turn.done():
            await self.recorder.flush_if_older(TEXT_FLUSH_SECONDS)
            await self.check_stalled()
            return
        turn, self.turn = self.turn, None
        try:
            stop = turn.result()
        except AgentGone:
            await self.exited()
            return
        except RequestError as exc:
            stop = None
            await self.note("refused", f"the agent answered the turn with error {exc.code}: {exc}")
        except Exception as exc:  # an answer that is not ACP (an unknown stopReason...)
            stop = None
            await self.note("refused", f"the agent's answer to the turn was not ACP: {exc}"[:2000])
        await self.recorder.drain()
        await self.recorder.flush_text()
        if stop == "cancelled" and self.recorder.cancel_note:
            await self.note("cancelled_turn", self.recorder.cancel_note)
        elif stop in ("max_tokens", "max_turn_requests", "refusal"):
            await self.note("refused", f"the agent ended its turn: {stop}")
        await in_db(store.end_turn)(self.row)
        await self.release(self.turn_served)

    async def release(self, served: int) -> None:
        again = await in_db(leases.release)(self.task_id, served, self.me)
        if not again:
            await in_db(announce_release)(self.task_id)
        self.nudge.set()

    async def check_stalled(self) -> None:
        loop = asyncio.get_running_loop()
        if self.permissions.busy:
            self.last_heard = loop.time()  # waiting for a person is not the agent stalling
            return
        limit = self.agent.turn_seconds or float(config.setting("TURN_SECONDS"))
        if self.cancel_sent_at is None and loop.time() - self.last_heard > limit:
            await self.note("stalled", f"nothing from the agent for {limit:g} s: cancelling")
            await self.cancel_turn("")
            self.cancel_sent_at = loop.time()
        elif (
            self.cancel_sent_at is not None
            and loop.time() - self.cancel_sent_at > STOP_GRACE_SECONDS
        ):
            await self.note("stalled", "the agent did not end its cancelled turn: stopping it")
            await self.stop_process(kill=True)

    async def cancel_turn(self, why: str) -> None:
        self.recorder.cancel_note = why
        self.permissions.void()  # permission requests it held while paused are void now
        await self.agent_process.cancel(self.row.session_id)
        self.permissions.withdraw()

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
        caps = await self.agent_process.start(HostClient(self), routes, self.heard)
        self.row.capabilities = caps
        await in_db(store.save)(self.row, "capabilities")

    def heard(self, _message: dict[str, Any]) -> None:
        """Every message from the agent: it is alive."""
        self.last_heard = asyncio.get_running_loop().time()

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
            if self.turn is not None:
                return  # the turn ends with the process; the loop records it
        await self.agent_process.close()

    async def cannot_start(self, exc: BaseException, served: int) -> None:
        """The agent could not be started or its session opened: the task ends saying why,
        rather than the agent being started again and again."""
        what = "stalled" if isinstance(exc, AgentGone) and exc.args else "exited"
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
        in_turn = self.turn is not None or self.row.turn_open
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
        self.turn = None
        await self.recorder.drain()
        await self.recorder.flush_text()
        await self.stop_process()
        self.permissions.withdraw()
        detail = f"the agent's process exited with code {code}"
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
            await self.release(self.turn_served)

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
