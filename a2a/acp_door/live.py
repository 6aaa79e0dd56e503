"""A session a client is attached to: its events become `session/update`s as they commit,
its prompt turn ends when its task stops, and its task's questions become permission
requests or forms.

One follower per attached session reads the context's TaskEvent log after per-task
cursors (a2a.acp_door.updates) — woken by the task's channel-layer group (a2a.notify), or
at the latest every ACP POLL_SECONDS — so a change made anywhere (a worker, the dashboard,
an A2A client, another editor) reaches the editor, and updates keep coming between turns
(work that continues after a resume; docs/design/acp-door.md, D66).

A turn (`session/prompt`) ends when its task:
- completes, fails or times out → end_turn (rejected → refusal, canceled → cancelled);
- is suspended (by anyone) → end_turn with `_meta["taskdeck/suspend"]` naming the pause;
- asks for input the client cannot answer in a form → end_turn with `_meta["taskdeck/input"]`
  (the question was shown as text; the next prompt answers it);
- has nothing more to do (the agent left it working and no worker holds it) → end_turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp import schema as s
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer
from pydantic import ValidationError

from a2a import acp_sdk, conf
from a2a.acp_door import sessions
from a2a.acp_door.updates import (
    SUSPEND_META,
    TASK_META,
    Fact,
    read_facts,
    render,
    request_of,
    suspension_facts,
)
from a2a.db_faults import Outage, is_infrastructure
from a2a.errors import NotAllowedNow
from a2a.event_kinds import SUSPENDING_KINDS, EventKind
from a2a.formats import text_of
from a2a.lifecycle import TERMINAL, State
from a2a.notify import Listener, group_name
from a2a.validation import ValidationFailed
from a2a.work import settled

if TYPE_CHECKING:
    from a2a.acp_door.connection import Door
    from a2a.acp_door.models import AcpSession
    from a2a.services import Actor

log = logging.getLogger(__name__)
db = database_sync_to_async
STANDARD = {"suspended", "resumed"}  # the seed's kinds: raw, to opted-in clients only
STOP_REASONS = {State.REJECTED: "refusal", State.CANCELED: "cancelled"}
INPUT_META = "taskdeck/input"  # a prompt that ends on an open question names it here
IDLE_POLL_SECONDS = 2.0  # between turns, when the channel layer can wake us
ASK_ATTEMPTS = 3
OUTAGE_RETRY_SECONDS = 1.0  # a follower tries again this often while the database is away
UNAVAILABLE = "the database is unavailable"  # a turn failed by an outage: its error's detail


@dataclass
class Turn:
    task_id: str
    done: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    asking: set[str] = field(default_factory=set)  # request ids with a question in flight
    cancelling: bool = False  # session/cancel arrived: the turn ends `cancelled`
    at: float = field(default_factory=lambda: asyncio.get_running_loop().time())

    def end(self, stop: str, meta: dict[str, Any] | None = None) -> None:
        if not self.done.done():
            self.done.set_result((stop, meta or {}))

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


class LiveSession:
    def __init__(
        self, door: Door, session: AcpSession, cursors: dict[str, int], floor: int
    ) -> None:
        self.door = door
        self.session = session
        self.cursors = dict(cursors)
        self.floor = floor
        self.turn: Turn | None = None
        self.lock = asyncio.Lock()  # a prompt's delivery and the follower's reading
        self.wake = asyncio.Event()
        self.follower: asyncio.Task | None = None
        self.helpers: set[asyncio.Task] = set()
        self.listener: Listener | None = None
        self.listening_to: str | None = None
        self.dialogs: dict[str, asyncio.Task] = {}  # request id → its permission/form ask

    # --- running ---------------------------------------------------------------------------

    def start(self) -> None:
        self.follower = asyncio.ensure_future(self._follow())

    def poke(self) -> None:
        self.wake.set()

    async def stop(self) -> None:
        for task in [self.follower, *self.helpers]:
            if task is not None:
                task.cancel()
        for task in [self.follower, *self.helpers]:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.turn is not None:
            self.turn.end("cancelled", {TASK_META: {"detail": "the session was closed"}})
        await self._listen_to(None)

    async def _listen_to(self, task_id: str | None) -> None:
        """Hear the channel-layer announcements of the session's current task."""
        if task_id == self.listening_to:
            return
        if self.listener is not None:
            await self.listener.leave()
            self.listener = None
        self.listening_to = task_id
        if task_id is not None:
            self.listener = Listener(group_name(task_id))
            await self.listener.join()

    def _must_poll(self) -> bool:
        """Poll often while a turn waits on its task (a worker that goes idle says nothing)
        or when no announcement can reach us (the in-memory layer cannot hear workers)."""
        listener = self.listener
        if self.turn is not None or listener is None or not listener.joined:
            return True
        return isinstance(listener.layer, InMemoryChannelLayer)

    async def _wait(self, seconds: float) -> None:
        if self.wake.is_set():
            return
        waits = [asyncio.ensure_future(self.wake.wait())]
        if self.listener is not None:
            waits.append(asyncio.ensure_future(self.listener.wait(seconds)))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
            # asyncio.wait never raises its tasks' outcomes, only our own cancellation: a
            # stop() that lands here must not be swallowed (it was, and close hung)
            await asyncio.wait(waits)
            for w in waits:
                if not w.cancelled():
                    w.exception()  # retrieved, so asyncio does not log it

    async def _follow(self) -> None:
        """Read and send the session's updates until stopped. A database outage (a2a.db_faults:
        a restart, a failover) does not end it: the read is tried again every
        OUTAGE_RETRY_SECONDS from the cursors it holds, so nothing is lost or repeated once
        the database is back; a turn still open after TASKDECK_STREAM_OUTAGE_SECONDS of it
        fails with -32603, as a stream ends then (docs/acp.md, "Database outages"). Any other
        error is a bug: logged, the open turn failed, and the follower ends (it used to end
        on an outage too, and the editor heard nothing more of its session)."""
        poll, outage = conf.ACP.poll_seconds, conf.TASKDECK.stream_outage_seconds
        loop = asyncio.get_running_loop()
        down = Outage(f"following session {self.session.session_id}", loop.time, log)
        try:
            while True:
                self.wake.clear()
                try:
                    facts = await self._step()
                except Exception as exc:
                    if not is_infrastructure(exc):
                        raise
                    if down.failed(exc) >= outage and self.turn is not None:
                        self.turn.fail(RequestError.internal_error({"detail": UNAVAILABLE}))
                    await asyncio.sleep(OUTAGE_RETRY_SECONDS)
                    continue
                down.over()
                if not facts:
                    await self._wait(poll if self._must_poll() else IDLE_POLL_SECONDS)
        except asyncio.CancelledError:
            raise
        except (ConnectionError, BrokenPipeError):
            log.info("client of session %s went away", self.session.session_id)
        except Exception:
            log.exception("following session %s failed", self.session.session_id)
            if self.turn is not None:
                self.turn.fail(RequestError.internal_error({"detail": "follower"}))

    async def _step(self) -> int:
        """One reading: send what committed, and end the turn when its task says so; how
        many events there were."""
        async with self.lock:
            await self._listen_to(self.session.task_id)
            facts = await self._drain()
            if not facts and self.turn is not None:
                verdict = await self._idle_verdict(self.turn)
                if verdict is None:
                    verdict = await self._background_verdict(self.turn)
                # what committed while we looked is sent before the answer
                if verdict is not None and not (facts := await self._drain()):
                    self.turn.end("end_turn", verdict)
        return facts

    async def _drain(self) -> int:
        """Send the updates of every event not seen yet; how many events there were."""
        facts = await db(read_facts)(
            self.session.context_id, self.cursors, self.floor, owner=self.session.owner
        )
        for fact in facts:
            self.cursors[fact.task.id] = fact.event.pk
            for update in render(fact, replay=False, opted_in=self.door.client.opted_in):
                await self.send(update)
            self._react(fact)
        return len(facts)

    async def send(self, update: dict[str, Any]) -> None:
        """One session/update: standard kinds through the SDK's models (validated), the
        seed's kinds raw (the SDK refuses kinds it does not know)."""
        sid = self.session.session_id
        if update["sessionUpdate"] in STANDARD:
            await acp_sdk.send_notification(
                self.door.conn, "session/update", {"sessionId": sid, "update": update}
            )
        else:
            await self.door.conn.session_update(sid, update)

    # --- replay ------------------------------------------------------------------------

    @classmethod
    async def replay(cls, door: Door, session: AcpSession) -> tuple[dict[str, int], int]:
        """`session/load`: every update of the session from its first event, the same
        every time; returns where live following starts (per-task cursors, and the floor
        for tasks the replay did not meet: the log's end before the replay began)."""
        _, floor = await db(sessions.attach_point)(session)
        cursors: dict[str, int] = {}
        probe = cls(door, session, {}, 0)
        while True:
            facts = await db(read_facts)(session.context_id, cursors, 0, owner=session.owner)
            if not facts:
                return cursors, floor
            for fact in facts:
                cursors[fact.task.id] = fact.event.pk
                for update in render(fact, replay=True, opted_in=door.client.opted_in):
                    await probe.send(update)

    # --- turns ------------------------------------------------------------------------

    async def run_turn(
        self, parts: list[dict[str, Any]], actor: Actor, metadata: dict[str, Any]
    ) -> tuple[str, dict]:
        if self.turn is not None and not self.turn.done.done():
            raise RequestError(
                -32004,
                "A prompt is already running in this session",
                {
                    "detail": "wait for it, or type /status, /suspend or /cancel (commands are "
                    "taken during a turn)"
                },
            )
        async with self.lock:
            prompted = await db(sessions.prompt)(
                self.session, parts, actor=actor, metadata=metadata
            )
            turn = Turn(prompted.task.id)
            self.turn = turn
        self.poke()
        try:
            return await turn.done
        finally:
            if self.turn is turn:
                self.turn = None

    async def cancel_turn(self, actor: Actor, reason: str) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.cancelling = True  # the turn ends `cancelled`, whatever the follower sees first
        canceled = await db(sessions.cancel)(self.session, actor=actor, reason=reason)
        if not canceled:  # it ended meanwhile; the client still asked to stop
            turn.end("cancelled")
        self.poke()

    async def _idle_verdict(self, turn: Turn) -> dict[str, Any] | None:
        """No new events: the turn's end `_meta` when the task has nothing more to do (the
        agent left it working and no worker holds it) or waits for an answer no question
        in flight will bring (the client cannot or did not answer it); else None."""
        if turn.asking or turn.cancelling or not await db(settled)(turn.task_id):
            return None
        state, request = await db(_waiting_on)(turn.task_id)  # after settled: see below
        meta: dict[str, Any] = {TASK_META: {"taskId": turn.task_id, "state": state}}
        if state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED):
            return {**meta, INPUT_META: request}
        if state == State.WORKING:
            return meta
        return None  # paused or over: its event ends the turn, with what it says

    async def _background_verdict(self, turn: Turn) -> dict[str, Any] | None:
        """TASKDECK_ACP_BACKGROUND_SECONDS after the prompt, a task still working (or
        queued) with no question in flight is left to work on in the background: the turn
        ends, so an editor that lets its user type only between turns (Zed) can send
        /status, /suspend or /cancel; its updates keep coming between turns."""
        seconds = conf.ACP.background_seconds
        loop = asyncio.get_running_loop()
        if not seconds or turn.asking or turn.cancelling or loop.time() - turn.at < seconds:
            return None
        state, _ = await db(_waiting_on)(turn.task_id)
        if state not in (State.SUBMITTED, State.WORKING):
            return None  # its own event ends the turn
        await self.send(say_background())
        return {TASK_META: {"taskId": turn.task_id, "state": state, "background": True}}

    def _react(self, fact: Fact) -> None:
        """Live-only consequences of an event: end the turn, ask a question, tell an
        opted-in client that the agent parked itself."""
        kind, task_id, state = fact.kind, fact.task.id, fact.event.to_state
        self._withdraw_answered(fact)
        if kind == EventKind.PARKED and self.door.client.opted_in:
            self.spawn(self._announce_park(fact))
        turn = self.turn
        if turn is None or task_id != turn.task_id:
            return
        meta = {TASK_META: {"taskId": task_id, "state": state}}
        if kind in SUSPENDING_KINDS:
            turn.end("end_turn", {**meta, SUSPEND_META: suspension_facts(fact)})
        elif state in TERMINAL:
            turn.end(STOP_REASONS.get(state, "end_turn"), meta)
        elif kind == EventKind.INPUT_REQUESTED:
            request = request_of(fact)
            request_id = request.get("requestId", "")
            turn.asking.add(request_id)
            self.dialogs[request_id] = self.spawn(self._ask(turn, fact, request))

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.helpers.add(task)
        task.add_done_callback(self.helpers.discard)
        return task

    def _withdraw_answered(self, fact: Fact) -> None:
        """A question answered elsewhere (another editor, the dashboard, an A2A client) or
        gone with its task: withdraw the dialog still open here (`$/cancel_request`)."""
        if not self.dialogs:
            return
        if fact.kind == EventKind.INPUT_PROVIDED:
            gone = [fact.data.get("requestId")]
        elif fact.kind == EventKind.INPUT_REQUESTED and fact.data.get("withdrawnRequestId"):
            gone = [fact.data["withdrawnRequestId"]]  # asked again: the new one is asked
        elif fact.event.to_state in TERMINAL or fact.kind in SUSPENDING_KINDS:
            gone = list(self.dialogs)
        else:
            return
        for request_id in gone:
            helper = self.dialogs.pop(request_id, None)
            if helper is not None:
                helper.cancel()

    async def _announce_park(self, fact: Fact) -> None:
        """The seed's agent → client `session/await_resumption` (informative: Taskdeck owns
        and fires the conditions). Clients that do not know it answer -32601."""
        data = fact.data
        params = {
            "sessionId": self.session.session_id,
            "reason": fact.event.reason,
            "summary": data.get("summary") or "",
            "_meta": {TASK_META: {"taskId": fact.task.id, "handle": data.get("handle")}},
        }
        if data.get("conditions"):
            params["conditions"] = data["conditions"]
        try:
            await asyncio.wait_for(
                acp_sdk.send_request(self.door.conn, "session/await_resumption", params), 30
            )
        except (RequestError, TimeoutError, ConnectionError) as exc:
            log.info("session/await_resumption not taken: %r", exc)

    # --- questions (docs/design/acp-door.md, D67) ----------------------------------------

    async def _ask(self, turn: Turn, fact: Fact, request: dict[str, Any]) -> None:
        request_id = request.get("requestId", "")
        explanation = text_of(fact.message.parts) if fact.message else ""
        fields = request.get("fields") or []
        required = [f for f in fields if f.get("required")]
        approval = [f for f in fields if f["type"] == "approval"]
        seconds = conf.ACP.ask_seconds
        try:
            if len(approval) == 1 and all(f in approval for f in required):
                values = await asyncio.wait_for(
                    self._permission(fact, request, approval[0], explanation), seconds
                )
                self.dialogs.pop(request_id, None)  # answered here: nothing to withdraw
                if values is not None:
                    await self._answer(fact.task.id, request_id, values)
                return
            if self.door.client.forms and fields:
                for attempt in range(ASK_ATTEMPTS):
                    values = await asyncio.wait_for(
                        self._form(request, explanation, retry=attempt > 0), seconds
                    )
                    self.dialogs.pop(request_id, None)
                    if values is None:
                        break  # declined: the question stays open as text
                    try:
                        await self._answer(fact.task.id, request_id, values, quiet=True)
                        return
                    except ValidationFailed as exc:
                        await self.send(_say_refused(exc))
            # Not answered here (no way to ask, dismissed, declined): the question stays
            # open as text and the follower ends the turn naming it (_idle_verdict).
        except (TimeoutError, ConnectionError, RequestError) as exc:
            log.info("question %s not answered over ACP: %r", request_id, exc)
        except NotAllowedNow:  # answered elsewhere first: this answer came too late
            await self.send(say_late())
        finally:
            self.dialogs.pop(request_id, None)
            turn.asking.discard(request_id)
            self.poke()

    async def _permission(self, fact: Fact, request, field_, explanation) -> dict | None:
        """`session/request_permission`, withdrawn if the question is answered elsewhere."""
        params = s.RequestPermissionRequest(
            session_id=self.session.session_id,
            tool_call=s.ToolCallUpdate(
                tool_call_id=f"input-{fact.task.id}-{fact.data.get('number')}",
                title=request.get("title") or field_.get("label") or "Approval",
                kind="other",
                status="pending",
                content=[
                    s.ContentToolCallContent(
                        type="content", content=s.TextContentBlock(type="text", text=explanation)
                    )
                ],
                raw_input=request,
            ),
            options=[
                s.PermissionOption(option_id="approve", name="Approve", kind="allow_once"),
                s.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        raw = await acp_sdk.send_withdrawable_request(
            self.door.conn,
            "session/request_permission",
            params.model_dump(mode="json", by_alias=True, exclude_none=True),
        )
        outcome = s.RequestPermissionResponse.model_validate(raw).outcome
        if getattr(outcome, "outcome", "") != "selected":
            return None  # cancelled: the turn is being canceled, or the question stays open
        return {field_["name"]: {"decision": outcome.option_id, "comment": ""}}

    async def _form(self, request, explanation: str, *, retry: bool) -> dict | None:
        message = explanation or request.get("title") or "Input required"
        if retry:
            message = "That answer was refused; please correct it. " + message
        mode = s.ElicitationFormSessionMode(
            session_id=self.session.session_id, requested_schema=_form_schema(request)
        )
        response = await self.door.conn.create_elicitation(message, mode)
        if getattr(response, "action", "") != "accept":
            return None
        content = dict(response.content or {})
        for f in request.get("fields") or []:
            if f["type"] == "approval" and isinstance(content.get(f["name"]), str):
                content[f["name"]] = {"decision": content[f["name"]], "comment": ""}
        return content

    async def _answer(self, task_id: str, request_id: str, values, *, quiet=False) -> None:
        actor = self.door.principal.actor if self.door.principal else None
        try:
            await db(sessions.answer)(task_id, request_id, values, actor=actor)
        except ValidationFailed as exc:
            if quiet:
                raise
            await self.send(_say_refused(exc))


def _waiting_on(task_id: str) -> tuple[str | None, dict[str, Any] | None]:
    """The task's state and its open input request."""
    from a2a.models import Task

    row = Task.objects.filter(pk=task_id).values_list("state", "input_request").first()
    return row if row is not None else (None, None)


def say_background() -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {
            "type": "text",
            "text": "The task works on in the background; its updates keep coming here. "
            "Type /status, /suspend or /cancel.",
        },
    }


def say_late() -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {
            "type": "text",
            "text": "That question was already answered elsewhere; your answer was not used.",
        },
    }


def _say_refused(exc: ValidationFailed) -> dict[str, Any]:
    detail = "; ".join(f"{k}: {', '.join(v)}" if k else ", ".join(v) for k, v in exc.errors.items())
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": f"That answer was refused: {detail}"},
    }


def _form_schema(request: dict[str, Any]) -> s.ElicitationSchema:
    """An input request's fields as ACP's restricted form schema (flat, primitive types)."""
    props: dict[str, Any] = {}
    for f in request.get("fields") or []:
        kind = f["type"]
        prop: dict[str, Any] = {"title": f.get("label") or f["name"]}
        if f.get("help"):
            prop["description"] = f["help"]
        if kind in ("string", "text"):
            prop["type"] = "string"
        elif kind in ("number", "integer", "boolean"):
            prop["type"] = kind
        elif kind == "enum":
            prop.update(type="string", enum=[str(o) for o in f.get("options") or []])
        elif kind == "approval":
            prop.update(type="string", enum=["approve", "reject"])
        props[f["name"]] = prop
    required = [f["name"] for f in request.get("fields") or [] if f.get("required")]
    try:
        return s.ElicitationSchema(properties=props, required=required or None)
    except ValidationError:
        return s.ElicitationSchema(properties={}, required=None)
