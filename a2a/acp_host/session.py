"""One held session of a hosted ACP agent: its process, its ACP connection, its turns.

The loop reads the task (one snapshot) whenever it is nudged — the supervisor's bell, its
poll, the agent's own messages — and does what the task's state asks:
- WORKING with a wakeup not served: hand the next user message to the agent as
  `session/prompt` (marked consumed BEFORE it is sent: never sent twice), or pass a
  resume on with `session/resume` (the seed's `handle`, `input`, `continueTranscript`);
- paused by a client: with an agent that declares the seed's `supportsSuspend`,
  `session/suspend` with the pause's mode; with any other, `interrupt_immediate` is
  `session/cancel` (the turn's work is lost, and the timeline says so), `finish_step`
  holds the agent's output and permission answers until the resume, and
  `wait_for_completion` lets the turn end;
- ended (canceled, failed...): cancel any turn, answer any permission as cancelled, stop.

What the agent says is recorded in the order it said it (a2a.acp_host.recorder). Its
permission requests become input requests; the answer, validated by the services, goes
back as the permission's outcome. Its `session/await_resumption` parks the task with its
conditions (validated as `tasks/await_resumption` validates them) and is answered with
Taskdeck's handle; Taskdeck fires the resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

from acp import RequestError, spawn_agent_process
from acp import schema as s

from a2a import acp_sdk, selectors, services
from a2a.acp_host import config, store
from a2a.acp_host.permissions import answer_to_outcome, as_input_request
from a2a.acp_host.recorder import Recorder
from a2a.conditions import parse_conditions
from a2a.errors import TaskError
from a2a.formats import text_of
from a2a.lifecycle import PAUSED, TERMINAL, State, TransitionRefused
from a2a.models import Suspension
from a2a.runtime import faults, leases
from a2a.runtime.executor import announce_release
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.validation import ValidationFailed

REFUSED = (TaskError, TransitionRefused)  # the services said no (the task moved meanwhile)

log = logging.getLogger(__name__)

# What Taskdeck offers the agents it hosts, honestly: no file system, no terminal (their
# requests are refused with -32601), and the seed's suspend RFC from the client's side.
CLIENT_CAPABILITIES = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
    "_meta": {"taskdeck/suspend": {"supportsAwaitResumption": True}},
}
IDLE_SECONDS = 5.0  # an idle session re-reads its task this often without a ring
TEXT_FLUSH_SECONDS = 1.0  # during a turn, gathered text is written at least this often
STOP_GRACE_SECONDS = 5.0  # after session/cancel of a stalled turn, before the process is killed
EXIT_GRACE_SECONDS = 2.0  # a closed connection, before its process counts as alive


def suspend_caps(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The seed's capabilities, where Taskdeck's ACP door puts them (`_meta`) or at the
    root of agentCapabilities, as the seed writes them."""
    meta = (capabilities.get("_meta") or {}).get("taskdeck/suspend") or {}
    return {
        "supportsSuspend": bool(meta.get("supportsSuspend") or capabilities.get("supportsSuspend")),
        "supportsAwaitResumption": bool(
            meta.get("supportsAwaitResumption") or capabilities.get("supportsAwaitResumption")
        ),
    }


CANCELLED = s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))


class AgentGone(Exception):
    """The agent's process exited (or was stopped) while we needed it."""


class HostedRun:
    """The session of task `task_id`, held by supervisor `me` until the task ends."""

    def __init__(self, task_id: str, agent: config.HostedAgent, me: str) -> None:
        self.task_id = task_id
        self.agent = agent
        self.me = me
        self.actor = services.Actor("agent", agent.skill_id)
        self.nudge = asyncio.Event()
        self.row: Any = None
        self.conn: Any = None
        self.process: Any = None
        self.stack = contextlib.AsyncExitStack()
        self.turn: asyncio.Task | None = None
        self.turn_served = 0
        self.recorder = Recorder(self)
        self.permission: tuple[str, list[Any], asyncio.Future] | None = None
        self.asking = 0  # permission requests in hand (asked, or held while paused)
        self.ask_lock = asyncio.Lock()  # one open input request at a time
        self.works = asyncio.Event()  # the task is working: held requests may be asked
        self.turn_epoch = 0  # bumped when a turn is cancelled: its held requests are void
        self.suspending: asyncio.Task | None = None
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
        gone = self.process is not None and self.process.returncode is not None
        if gone or (
            self.conn is not None and self.turn is None and acp_sdk.is_disconnected(self.conn)
        ):
            await self.exited()  # between turns too: restarted before a message is consumed
            return
        await self.recorder.retry_held(snap.state)
        if snap.state == State.WORKING:
            self.works.set()
            if self.permission is not None:
                await self.deliver_permission()
        else:
            self.works.clear()
        susp = snap.suspension
        if snap.state in PAUSED and susp is not None and susp.id != self.row.acted_on:
            await self.on_pause(susp)
        if self.turn is not None:
            await self.watch_turn()
            return
        await self.recorder.flush_text()
        if snap.state in leases.RUNNABLE and snap.wakeups != snap.served:
            await self.next_turn(snap)

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
            and self.resumes_to_agent(last)
        ):
            self.row.resumed_to_agent = last.id
            await in_db(store.save)(self.row, "resumed_to_agent")
            await self.start_turn(self.pass_resume(last), served, None)
        elif snap.next_message is not None:
            msg = snap.next_message
            await self.start_turn(self.prompt(msg), served, msg.seq)
        else:
            await self.release(served)

    def resumes_to_agent(self, s: Suspension) -> bool:
        """A resume the agent must hear of: its own park, or a pause it was told of with
        session/suspend. A standard agent's pause ends with nothing to say: its next
        prompt goes on."""
        ours = (s.metadata or {}).get("acp") == "await_resumption"
        told = s.id == self.row.acted_on and bool(self.row.agent_handle)
        return (ours or told) and self.can_resume()

    def can_resume(self) -> bool:
        caps = self.row.capabilities or {}
        return "resume" in (caps.get("sessionCapabilities") or {})

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
        if self.permission is not None or self.asking:
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

    # ----- the agent's process --------------------------------------------------------

    async def ensure_session(self) -> None:
        if self.conn is not None:
            return
        await self.start_process()
        row = self.row
        cwd = self.cwd()
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
            if self.can_resume():
                await self._call(acp_sdk.send_request(self.conn, "session/resume", taken), "resume")
                how = "session/resume"
            elif caps.get("loadSession"):
                self.recorder.muted = True  # its replay is history we recorded already
                try:
                    await self._call(acp_sdk.send_request(self.conn, "session/load", taken), "load")
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
        answer = await self._call(
            acp_sdk.send_request(self.conn, "session/new", {"cwd": cwd, "mcpServers": []}), "new"
        )
        self.row.session_id = s.NewSessionResponse.model_validate(answer).session_id
        await in_db(store.save)(self.row, "session_id")

    async def cannot_start(self, exc: BaseException, served: int) -> None:
        """The agent could not be started or its session opened: the task ends saying why,
        rather than the agent being started again and again."""
        what = "stalled" if isinstance(exc, AgentGone) and exc.args else "exited"
        detail = f"the agent could not be started: {type(exc).__name__}: {exc}"[:1500]
        tail = self.stderr_tail()
        await self.note(what, detail + (f"; its last words on stderr: {tail}" if tail else ""))
        await self.stop_process(kill=True)
        await self.give_up(detail)
        await self.release(served)

    async def give_up(self, reason: str) -> None:
        """End the task: failed when it was working, cancelled when it waited (for an
        answer, or paused): the agent behind it is gone."""
        state = await in_db(store.task_state)(self.task_id)
        act = services.fail_task if state == State.WORKING else services.cancel_task
        with contextlib.suppress(*REFUSED):
            await in_db(act)(self.task_id, actor=self.actor, reason=reason[:2000])

    def cwd(self) -> str:
        if self.agent.cwd:
            return self.agent.cwd
        path = Path(config.setting("SESSIONS_DIR")) / self.task_id
        path.mkdir(parents=True, exist_ok=True)
        return str(path.resolve())

    def stderr_path(self) -> Path:
        """The agent's stderr, kept beside (not in) its working directory. The SDK would
        leave it a pipe nobody reads: an agent that logs a lot would block on it."""
        path = Path(config.setting("SESSIONS_DIR")) / f"{self.task_id}.stderr.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def stderr_tail(self, size: int = 600) -> str:
        try:
            with self.stderr_path().open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - size))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    async def start_process(self) -> None:
        env = {**_base_env(), **self.agent.env}
        stderr = self.stack.enter_context(self.stderr_path().open("ab"))
        self.conn, self.process = await self.stack.enter_async_context(
            spawn_agent_process(
                self.client_for,
                self.agent.command,
                *self.agent.args,
                env=env,
                cwd=self.cwd(),
                transport_kwargs={"stderr": stderr},
                use_unstable_protocol=True,
            )
        )
        # Our own routes on the SDK's router (a2a.acp_sdk): the seed's
        # session/await_resumption, and the two it has typed routes for, which would copy
        # `_meta` keys over their typed parameters (`_meta: {"options": …}` replacing the
        # options), as its agent-side routes did for the ACP door.
        for method, func, kind in (
            ("session/await_resumption", self.await_resumption, "request"),
            ("session/request_permission", self.on_permission_request, "request"),
            ("session/update", self.on_update, "notification"),
        ):
            acp_sdk.add_route(self.conn, method, func, kind)
        acp_sdk.observe_incoming(self.conn, self.heard)
        params = {
            "protocolVersion": 1,
            "clientCapabilities": CLIENT_CAPABILITIES,
            "clientInfo": {"name": "taskdeck", "version": "1"},
        }
        # raw, then checked: the SDK's model drops the seed's capabilities at the root
        raw = await self._call(acp_sdk.send_request(self.conn, "initialize", params), "initialize")
        s.InitializeResponse.model_validate(raw)
        caps = raw.get("agentCapabilities") if isinstance(raw, dict) else None
        self.row.capabilities = caps if isinstance(caps, dict) else {}
        await in_db(store.save)(self.row, "capabilities")

    def client_for(self, _conn: Any) -> Any:
        from a2a.acp_host.client import HostClient

        return HostClient(self)

    def heard(self, _message: dict[str, Any]) -> None:
        """Every message from the agent: it is alive."""
        self.last_heard = asyncio.get_running_loop().time()

    async def stop_process(self, *, kill: bool = False) -> None:
        proc = self.process
        if proc is not None and proc.returncode is None and kill:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        if self.turn is not None and kill:
            return  # the turn ends with the process; the loop records it
        self.conn, self.process = None, None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.stack.aclose(), 10)
        self.stack = contextlib.AsyncExitStack()

    async def exited(self) -> None:
        """The agent's process is gone. During a turn the task fails (the turn's work is
        lost and its prompt is never sent twice); between turns the next turn starts it
        again (taking the session up with session/resume or session/load)."""
        proc = self.process
        broke = False
        if proc is not None and proc.returncode is None:
            # the connection ended first (EOF reaches us before the exit status does):
            # a process that is exiting says so within moments; one that is not broke
            # the connection (it wrote something that is not JSON-RPC) and is stopped
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), EXIT_GRACE_SECONDS)
            except TimeoutError:
                broke = True
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        code = proc.returncode if proc is not None else None
        in_turn = self.turn is not None or self.row.turn_open
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
        self.turn = None
        await self.recorder.drain()
        await self.recorder.flush_text()
        await self.stop_process()
        self.withdraw_permission()
        detail = f"the agent's process exited with code {code}"
        if broke:
            detail = (
                "the connection to the agent broke (it wrote something that is not a JSON-RPC "
                "message, or closed its output), so its process was stopped"
            )
        tail = self.stderr_tail()
        said = f"; its last words on stderr: {tail}" if tail else ""
        await self.note("exited", detail + (" during a turn" if in_turn else "") + said)
        if in_turn:
            await in_db(store.end_turn)(self.row)
            await self.give_up(f"{detail} during a turn")
            await self.release(self.turn_served)

    async def end(self, snap: store.Snapshot | None) -> None:
        """The task ended (canceled, failed, completed by someone): the agent stops."""
        self.withdraw_permission()
        if self.turn is not None and not self.turn.done():
            await self.cancel_turn("")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.turn), STOP_GRACE_SECONDS)
        if self.turn is not None:
            self.turn.cancel()
            self.turn = None
            await in_db(store.end_turn)(self.row)
        self.finished = True

    # ----- work sent to the agent -------------------------------------------------------

    async def prompt(self, msg: Any) -> str:
        blocks = [s.TextContentBlock(type="text", text=text_of(msg.parts) or "")]
        return await self._call(self.conn.prompt(session_id=self.row.session_id, prompt=blocks))

    async def pass_resume(self, last: Suspension) -> str:
        params: dict[str, Any] = {
            "sessionId": self.row.session_id,
            "cwd": self.cwd(),
            "mcpServers": [],
            "continueTranscript": last.continue_transcript is not False,
        }
        if (last.metadata or {}).get("acp") == "await_resumption":
            params["handle"] = last.handle
        elif self.row.agent_handle:
            params["handle"] = self.row.agent_handle
        if last.resume_input is not None:
            params["input"] = last.resume_input
        await self._call(acp_sdk.send_request(self.conn, "session/resume", params), "resume")
        return "end_turn"

    async def _call(self, request: Any, what: str = "") -> Any:
        """Await a request to the agent; its process exiting meanwhile is AgentGone. With
        `what` (a request that should be answered at once, not a prompt), an agent that
        does not answer within REQUEST_SECONDS is stopped: AgentGone(what)."""
        proc = self.process
        waiter = asyncio.ensure_future(request)
        exit_watch = asyncio.ensure_future(proc.wait())
        limit = (
            (self.agent.request_seconds or float(config.setting("REQUEST_SECONDS")))
            if (what)
            else None
        )
        try:
            done, _ = await asyncio.wait(
                {waiter, exit_watch}, timeout=limit, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                raise AgentGone(f"it did not answer {what} within {limit:g} s")
            if waiter in done:
                try:
                    result = waiter.result()
                except ConnectionError:  # the SDK closed the connection: EOF or bad input
                    raise AgentGone() from None
                return getattr(result, "stop_reason", result)
            raise AgentGone()
        finally:
            exit_watch.cancel()
            if not waiter.done():
                waiter.cancel()

    async def cancel_turn(self, why: str) -> None:
        self.recorder.cancel_note = why
        self.turn_epoch += 1  # permission requests it held while paused are void now
        self.works.set()
        if self.conn is not None and self.row.session_id:
            with contextlib.suppress(Exception):
                await self.conn.cancel(session_id=self.row.session_id)
        self.withdraw_permission()

    def withdraw_permission(self) -> None:
        """A pending permission request is answered `cancelled` (the turn is cancelled or
        over): ACP asks the client to, and an agent may wait for it before it stops."""
        if self.permission is not None:
            _, _, fut = self.permission
            if not fut.done():
                fut.set_result(CANCELLED)
            self.permission = None
        self.turn_epoch += 1
        self.works.set()

    async def on_pause(self, susp: Suspension) -> None:
        """A pause the agent has not heard of yet."""
        self.row.acted_on = susp.id
        self.row.agent_handle = ""  # a handle belongs to one suspension
        await in_db(store.save)(self.row, "acted_on", "agent_handle")
        if susp.initiator != Suspension.Initiator.CLIENT:
            return  # the agent's own park: it knows
        caps = suspend_caps(self.row.capabilities or {})
        if self.conn is not None and caps["supportsSuspend"]:
            # not awaited here: an agent may answer only once its step is over, and that
            # step may wait on a permission answer this loop must still be free to pass
            self.suspending = asyncio.ensure_future(self.suspend(susp))
        elif susp.mode == Suspension.Mode.INTERRUPT_IMMEDIATE and self.turn is not None:
            await self.cancel_turn(
                "paused with interrupt_immediate: the agent cannot suspend, so its turn was "
                "cancelled (session/cancel) and that turn's work is lost"
            )

    async def suspend(self, susp: Suspension) -> None:
        params = {"sessionId": self.row.session_id, "mode": susp.mode or "finish_step"}
        if susp.reason:
            params["reason"] = susp.reason
        try:
            answer = await self._call(
                acp_sdk.send_request(self.conn, "session/suspend", params), "suspend"
            )
        except (RequestError, AgentGone) as exc:
            await self.note("refused", f"the agent refused session/suspend: {exc}")
            return
        handle = answer.get("handle") if isinstance(answer, dict) else None
        if self.row.acted_on == susp.id:  # still the pause it answered
            self.row.agent_handle = str(handle or "")[:200]
            await in_db(store.save)(self.row, "agent_handle")

    # ----- requests from the agent -------------------------------------------------------

    async def on_update(self, params: Any) -> None:
        """session/update: queued before any await (arrival order is kept), then written."""
        note = s.SessionNotification.model_validate(params)
        if note.session_id == self.row.session_id or not self.row.session_id:
            self.recorder.receive(note.update)
            await self.recorder.drain()

    async def on_permission_request(self, params: Any) -> Any:
        request = s.RequestPermissionRequest.model_validate(params)
        return await self.ask_permission(request.tool_call, request.options)

    async def ask_permission(self, tool_call: Any, options: list[Any]) -> Any:
        """session/request_permission: an input request; the answer is the outcome."""
        epoch = self.turn_epoch
        self.asking += 1
        try:
            await self.recorder.drain()
            await self.recorder.flush_text()
            async with self.ask_lock:  # parallel tool calls: one question at a time
                while True:
                    if self.turn_epoch != epoch:
                        return CANCELLED  # its turn was cancelled meanwhile
                    state = await in_db(store.task_state)(self.task_id)
                    if state in TERMINAL or state is None:
                        return CANCELLED
                    if state == State.WORKING:
                        break
                    # paused (finish_step holds it), or another question open: asked when
                    # the task works again
                    self.works.clear()
                    self.nudge.set()
                    await self.works.wait()
                request = as_input_request(tool_call, options)
                explanation = request.pop("explanation")
                try:
                    canonical = await in_db(services.request_input)(
                        self.task_id, actor=self.actor, explanation=explanation, request=request
                    )
                except (*REFUSED, ValidationFailed) as exc:
                    log.warning("task %s: permission request not asked: %s", self.task_id, exc)
                    return CANCELLED
                fut: asyncio.Future = asyncio.get_running_loop().create_future()
                self.permission = (canonical["requestId"], options, fut)
                self.nudge.set()
                return await fut
        finally:
            self.asking -= 1

    async def deliver_permission(self) -> None:
        assert self.permission is not None
        request_id, options, fut = self.permission
        answered = await in_db(selectors.input_answer)(self.task_id, request_id)
        if answered is None:
            return
        self.permission = None
        if not fut.done():
            fut.set_result(answer_to_outcome(answered, options))

    async def await_resumption(self, params: Any) -> dict[str, Any]:
        """The seed's agent → client `session/await_resumption`: park the task."""
        if not isinstance(params, dict):
            raise RequestError.invalid_params({"details": "params must be an object"})
        if params.get("sessionId") != self.row.session_id:
            raise RequestError(-32002, "unknown session", {"sessionId": params.get("sessionId")})
        reason = params.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise RequestError.invalid_params({"reason": ["must be a non-empty string"]})
        try:
            conditions = parse_conditions(params.get("conditions"))
        except ValidationFailed as exc:
            raise RequestError.invalid_params(exc.prefixed("conditions").errors) from None
        await self.recorder.drain()
        await self.recorder.flush_text()
        summary = params.get("summary") if isinstance(params.get("summary"), str) else ""
        try:
            outcome = await in_db(services.park_task)(
                self.task_id,
                actor=self.actor,
                reason=reason,
                conditions=conditions,
                summary=summary,
                metadata={"acp": "await_resumption"},
            )
        except ValidationFailed as exc:
            raise RequestError.invalid_params(exc.errors) from None
        except REFUSED as exc:
            raise RequestError(-32011, f"cannot park now: {exc}") from None
        susp = outcome.suspension
        self.row.acted_on = susp.id
        await in_db(store.save)(self.row, "acted_on")
        self.nudge.set()
        return {"handle": susp.handle, "suspendedAt": susp.suspended_at.isoformat()}

    async def note(self, what: str, detail: str) -> None:
        detail = detail.replace("\x00", "")  # e.g. from its stderr: not storable
        with contextlib.suppress(*REFUSED, ValidationFailed):
            await in_db(services.note_host)(
                self.task_id, actor=self.actor, what=what, detail=detail
            )


def _base_env() -> dict[str, str]:
    """The SDK's child environment is trimmed already; PATH and HOME are what agents
    launched by npx or a shell script need to start at all."""
    return {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
