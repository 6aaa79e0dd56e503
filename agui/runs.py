"""POST /agui/run: RunAgentInput in, AG-UI events out (SSE), one A2A task per run.

RUN_STARTED, STATE_SNAPSHOT (the thread's tasks), ACTIVITY_SNAPSHOT for the interrupts a
resume answered (a reloaded client may not hold them), the run's agent texts the snapshot
already holds (a worker answered before it was read: `_opening`), then the task's
STATE_DELTA / ACTIVITY_* and its agent text as TEXT_MESSAGE_START/CONTENT/END, until the
task stops:
- input-required → STATE_SNAPSHOT, then RUN_FINISHED {outcome: interrupt, interrupts}
- paused → RUN_FINISHED {outcome: interrupt} with reason "a2a:paused"
- completed → RUN_FINISHED (success); canceled → outcome cancelled
- failed / rejected → RUN_ERROR.
Input that cannot be acted on gets RUN_ERROR and changes nothing; input that does not
parse gets HTTP 422 before any stream. The stream always ends with RUN_FINISHED or
RUN_ERROR, even when the server fails.

A run's STATE_SNAPSHOT is its thread's tasks, whether or not they are still on the live
board (no EVICTION reaches a run stream), cut like the socket's to
TASKDECK["VIEW"]["SNAPSHOT_BYTES"]: the run's own task first, then the thread's newest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    ActivitySnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from ag_ui.core import (
    Interrupt as AguiInterrupt,
)
from ag_ui.encoder import EventEncoder
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError

from a2a import conf, jsonsafe, services
from a2a.auth import (
    Unauthenticated,
    authenticate,
    revalidate_seconds,
    still_valid,
    user_actor,
)
from a2a.db_faults import InfrastructureFault, Outage, guarded, is_infrastructure
from a2a.event_kinds import ENDING_KINDS
from a2a.formats import text_of
from a2a.lifecycle import PAUSED, State
from a2a.models import Task
from agui import bridge, fanout, selectors, view
from agui.models import AguiEvent, Interrupt
from agui.projector import EVICTION, TEXT
from agui.schemas import response_schema

log = logging.getLogger(__name__)
STOPS = {
    State.INPUT_REQUIRED,
    State.AUTH_REQUIRED,
    State.PAUSED_BY_CLIENT,
    State.PAUSED_BY_AGENT,
    State.COMPLETED,
    State.CANCELED,
    State.FAILED,
    State.REJECTED,
}
POLL = 0.25


def _enc(event) -> bytes:
    return EventEncoder().encode(event).encode()


def _rows(task_id: str, after: int) -> tuple[list[tuple], str, bool]:
    """The task's log rows above view version `after`, its state, and whether the view has
    caught up with it.

    Read in this order: the task's state and version, then the task version its view
    entry reflects, then the rows. A pass commits a task's rows with its view entry, so
    when the view has reached the version read, every row of it is among the rows read
    after. (Read the other way round, a stop projected between the reads looked caught up
    with rows still unread: a run ended without the interrupt's ACTIVITY_SNAPSHOT —
    tests/runtime/test_agui_runs.py, seen in CI.) The projection runs after the writer's
    commit (agui.projection), so "the task stopped" is not enough: the view must have
    reached the stop too."""
    state, version = Task.objects.filter(pk=task_id).values_list("state", "version").get()
    projected = selectors.projected_version(task_id)
    rows = list(
        AguiEvent.objects.filter(task_id=task_id, version__gt=after)
        .exclude(type=EVICTION)
        .order_by("id")
        .values_list("id", "version", "type", "event")
    )
    return rows, state, projected >= version


def _thread_window(context_id: str, task_id: str, actor: services.Actor | None) -> selectors.Window:
    """The thread's tasks `actor` may see, the run's own first, within the snapshot
    budget."""
    return selectors.window(
        max_bytes=view.limits().snapshot_bytes,
        visible_to=actor,
        context_id=context_id,
        first=task_id,
        live_only=False,
    )


def _thread_snapshot(context_id: str, task_id: str, actor: services.Actor | None) -> dict:
    return _thread_window(context_id, task_id, actor).snapshot


def _opening(plan: bridge.RunPlan) -> tuple[dict, list[Interrupt], list[tuple], int]:
    """The run's snapshot, the interrupts its resume answered, the run's agent texts the
    snapshot already holds, and the view version of its task the snapshot holds: the
    stream relays the task's rows above it (by version, not by a global row id, which a
    pass committing late would fall below).

    A worker may take the task as soon as start_run commits, and on a loaded machine the
    projection may project its rows before this read: the snapshot then holds their
    effects, so their deltas and activities are not replayed over it, but an agent's text
    is not state — it is a message the client must be sent. So the TEXT rows between the
    run's start (`plan.since`) and the snapshot's version come with the opening; rows at
    or below the snapshot's version are committed with it (a pass commits a task's rows
    with its view entry), so they are all read here."""
    window = _thread_window(plan.context_id, plan.task_id, plan.actor)
    held = window.versions.get(plan.task_id, 0)
    texts = list(
        AguiEvent.objects.filter(
            task_id=plan.task_id, type=TEXT, version__gt=plan.since, version__lte=held
        )
        .order_by("id")
        .values_list("id", "version", "type", "event")
    )
    return (
        window.snapshot,
        list(Interrupt.objects.filter(interrupt_id__in=plan.resumed)),
        texts,
        held,
    )


def _ending(
    task_id: str, actor: services.Actor | None
) -> tuple[str, dict, list[Interrupt], str, str]:
    task = Task.objects.select_related("status_message").get(pk=task_id)
    snapshot = _thread_snapshot(task.context_id, task_id, actor)
    pending = list(Interrupt.objects.filter(task_id=task_id, pending=True))
    # a failed or rejected task's one ending event (failed, rejected or timed out) says why
    failure = task.events.filter(kind__in=ENDING_KINDS).last()
    text = text_of(task.status_message.parts) if task.status_message is not None else ""
    return task.state, snapshot, pending, (failure.reason if failure else ""), text


def _interrupt(i: Interrupt, context_id: str) -> AguiInterrupt:
    content = i.content
    if i.kind == Interrupt.Kind.INPUT_REQUEST:
        request = content.get("request") or {}
        return AguiInterrupt(
            id=i.interrupt_id,
            reason="input_required",
            message=content.get("explanation") or request.get("title") or "Input required",
            response_schema=response_schema(request),
            metadata={
                "taskId": i.task_id,
                "contextId": context_id,
                "requestId": i.request_id,
                "request": request,
            },
        )
    return AguiInterrupt(
        id=i.interrupt_id,
        reason="a2a:paused",
        message=f"Paused by {content.get('initiator')}: {content.get('reason') or 'no reason'}",
        metadata={"taskId": i.task_id, "contextId": context_id, "pause": content},
    )


def _relayed(type_: str, event: dict[str, Any]) -> list[bytes]:
    """One row of the task's AG-UI log as the run streams it: an agent message expands to
    TEXT_MESSAGE_START/CONTENT/END; every other event is sent as it was logged."""
    if type_ != TEXT:
        return [f"data: {_json(event)}\n\n".encode()]
    message_id = event["messageId"]
    return [
        _enc(TextMessageStartEvent(message_id=message_id)),
        _enc(TextMessageContentEvent(message_id=message_id, delta=event["text"])),
        _enc(TextMessageEndEvent(message_id=message_id)),
    ]


def _last_words(
    plan: bridge.RunPlan,
    state: str,
    snapshot: dict,
    pending: list[Interrupt],
    failure: str,
    text: str,
) -> tuple[str, list[Any]]:
    """How a run whose task stopped in `state` ends: its outcome (bridge.finish_run) and
    the events that say it. Failed or rejected: RUN_ERROR. Canceled or completed:
    RUN_FINISHED. Waiting: the thread's STATE_SNAPSHOT, then RUN_FINISHED with the
    interrupts it waits on (RUN_ERROR when there is none to answer: auth-required)."""
    if state in (State.FAILED, State.REJECTED):
        return state, [RunErrorEvent(message=failure or f"task {state}", code=f"a2a:{state}")]
    if state == State.CANCELED:
        cancelled = RunFinishedCancelledOutcome()
        finished = RunFinishedEvent(thread_id=plan.thread_id, run_id=plan.run_id, outcome=cancelled)
        return "cancelled", [finished]
    if state == State.COMPLETED:
        result = text or None
        return "success", [
            RunFinishedEvent(thread_id=plan.thread_id, run_id=plan.run_id, result=result)
        ]
    wanted = Interrupt.Kind.PAUSE if state in PAUSED else Interrupt.Kind.INPUT_REQUEST
    interrupts = [_interrupt(i, plan.context_id) for i in pending if i.kind == wanted]
    thread = StateSnapshotEvent(snapshot=snapshot)
    if not interrupts:  # waiting without a structured request (auth-required)
        return "error", [thread, RunErrorEvent(message=f"task is {state}", code=f"a2a:{state}")]
    waits = RunFinishedInterruptOutcome(interrupts=interrupts)
    return "interrupt", [
        thread,
        RunFinishedEvent(thread_id=plan.thread_id, run_id=plan.run_id, outcome=waits),
    ]


KEEPALIVE = b": keepalive\n\n"
# how often a run tries its read again while the database is unreachable
OUTAGE_RETRY_SECONDS = 1.0
UNAVAILABLE = "the database is unavailable; try again shortly"


class _Outage(Exception):
    """The database stayed unreachable for TASKDECK_STREAM_OUTAGE_SECONDS."""


@dataclass(frozen=True)
class _Read:
    value: Any


async def _through_outage(call, *args) -> AsyncIterator[bytes | _Read]:
    """`call(*args)` (a guarded database read in a pooled thread) as `_Read(result)`, tried
    again every OUTAGE_RETRY_SECONDS while the database is unreachable, with keep-alive
    comments meanwhile; past TASKDECK_STREAM_OUTAGE_SECONDS, _Outage. The run's reads
    are by its task's view version, so a read tried again misses and repeats nothing."""
    loop = asyncio.get_running_loop()
    settings = conf.TASKDECK
    keepalive, outage = settings.stream_keepalive_seconds, settings.stream_outage_seconds
    down, quiet_since = Outage("AG-UI run", loop.time, log), None
    while True:
        try:
            result = await call(*args)
        except InfrastructureFault as fault:
            if down.failed(fault) >= outage:
                raise _Outage from fault
            if quiet_since is None:  # keep-alives are counted from the outage's start
                quiet_since = loop.time()
            if loop.time() - quiet_since >= keepalive:
                quiet_since = loop.time()
                yield KEEPALIVE
            await asyncio.sleep(max(0.01, min(OUTAGE_RETRY_SECONDS, keepalive, outage)))
            continue
        down.over()
        yield _Read(result)
        return


def _in_pool(fn):
    return database_sync_to_async(guarded(fn), thread_sensitive=False)


async def _stream(
    run: RunAgentInput, actor: services.Actor, session_key: str | None = None
) -> AsyncIterator[bytes]:
    """The run's SSE body (the module's docstring lists what it sends): start the run,
    relay its task's AG-UI log until the task stops, then say how the run ended; the
    outcome is recorded whatever happens (bridge.finish_run) — unless the database is
    down then: logged, and the stream still ends. Idle, it sends a keep-alive comment every
    TASKDECK_STREAM_KEEPALIVE_SECONDS; a database outage is waited out (the reads are tried
    again from where the run is) for TASKDECK_STREAM_OUTAGE_SECONDS, then RUN_ERROR
    `unavailable` ends the run. After RUN_ERROR or RUN_FINISHED the body ends, so the
    connection closes (issue 31: it used to stay open after RUN_ERROR)."""
    try:
        plan = await database_sync_to_async(bridge.start_run)(run, actor)
    except bridge.RunRefused as refused:
        yield _enc(RunErrorEvent(message=refused.message, code=refused.code))
        return
    except Exception as exc:
        # Never leave the client's stream open without an answer.
        if is_infrastructure(exc):
            log.warning("AG-UI run for thread %s could not start: %s", run.thread_id, exc)
            yield _enc(RunErrorEvent(message=UNAVAILABLE, code="unavailable"))
            return
        log.exception("AG-UI run for thread %s could not start", run.thread_id)
        yield _enc(RunErrorEvent(message="the server failed to start the run", code="internal"))
        return
    outcome = "error"
    # woken when the projection wrote log rows (any task's: the process's one log reader);
    # a Redis outage only slows a run to POLL, never fails it
    tail = fanout.tailer()
    news = await tail.register()
    try:
        yield _enc(
            RunStartedEvent(
                thread_id=plan.thread_id, run_id=plan.run_id, protocol_version=PROTOCOL_VERSION
            )
        )
        async for got in _through_outage(_in_pool(_opening), plan):
            if isinstance(got, bytes):
                yield got
            else:
                snapshot, resumed, said, held = got.value
        yield _enc(StateSnapshotEvent(snapshot=snapshot))
        for i in resumed:
            yield _enc(
                ActivitySnapshotEvent(
                    message_id=i.interrupt_id, activity_type=i.kind, content=i.content
                )
            )
        for _, _, type_, event in said:  # the run's texts the snapshot came after
            for chunk in _relayed(type_, event):
                yield chunk
        fetch, valid = _in_pool(_rows), _in_pool(still_valid)
        loop, every = asyncio.get_running_loop(), revalidate_seconds()
        keepalive = conf.TASKDECK.stream_keepalive_seconds
        check_at = loop.time() + every
        quiet_since = loop.time()
        while True:
            if loop.time() >= check_at:
                async for got in _through_outage(valid, actor, session_key):
                    if isinstance(got, bytes):
                        yield got
                    elif not got.value:  # the key was revoked, the session ended
                        outcome = "revoked"
                        gone = "the session has ended" if session_key else "the API key was revoked"
                        yield _enc(RunErrorEvent(message=gone, code="revoked"))
                        return
                check_at = loop.time() + every
            async for got in _through_outage(fetch, plan.task_id, held):
                if isinstance(got, bytes):
                    yield got
                    quiet_since = loop.time()
                else:
                    rows, state, caught_up = got.value
            for _, version, type_, event in rows:
                held = version
                quiet_since = loop.time()
                for chunk in _relayed(type_, event):
                    yield chunk
            # stopped, and the view has every row up to the stop
            if state in STOPS and caught_up:
                break
            if not rows:
                if loop.time() - quiet_since >= keepalive:
                    quiet_since = loop.time()
                    yield KEEPALIVE
                await _woken(news, max(0.01, min(POLL, keepalive)))
        async for got in _through_outage(_in_pool(_ending), plan.task_id, plan.actor):
            if isinstance(got, bytes):
                yield got
            else:
                ending = got.value
        stopped, last_words = _last_words(plan, *ending)
        for event in last_words[:-1]:
            yield _enc(event)
        outcome = stopped  # recorded (finish_run) even if the client leaves now
        yield _enc(last_words[-1])
    except _Outage:
        log.warning("AG-UI run %s: the database stayed unavailable; RUN_ERROR", plan.run_id)
        yield _enc(RunErrorEvent(message=UNAVAILABLE, code="unavailable"))
    except Exception:
        log.exception("AG-UI run %s failed", plan.run_id)
        yield _enc(RunErrorEvent(message="the server failed while running", code="internal"))
    finally:
        try:  # the outcome first: it is the record; leaving the group is housekeeping
            await _in_pool(bridge.finish_run)(plan.run_id, outcome)
        except InfrastructureFault as fault:  # the stream must end all the same
            log.warning("AG-UI run %s: outcome %r recorded later: %s", plan.run_id, outcome, fault)
            _record_later(plan.run_id, outcome)
        finally:
            tail.unregister(news)


# A run's outcome the database could not take when its stream ended is tried again this long
# (a run left without one keeps its task's AG-UI log from retention: agui.retention)
RECORD_RETRY_SECONDS = 600.0
_recording: set[asyncio.Task] = set()  # held, so that the loop does not drop them


def _record_later(run_id: str, outcome: str) -> None:
    """Record the run's outcome once the database is back, whatever the client does."""

    async def retry() -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + RECORD_RETRY_SECONDS
        while loop.time() < give_up:
            await asyncio.sleep(OUTAGE_RETRY_SECONDS)
            try:
                await _in_pool(bridge.finish_run)(run_id, outcome)
            except InfrastructureFault:
                continue
            log.warning("AG-UI run %s: outcome %r recorded", run_id, outcome)
            return
        log.error("AG-UI run %s: outcome %r never recorded (database down)", run_id, outcome)

    task = asyncio.get_running_loop().create_task(retry())
    _recording.add(task)
    task.add_done_callback(_recording.discard)


async def _woken(news: asyncio.Queue, timeout: float) -> None:
    """Wait until the log reader hands over new rows (or `timeout`), then drop what it
    handed: the run reads its own task's rows itself. asyncio.timeout, not wait_for: on
    Python 3.11 wait_for swallows a cancellation that arrives as the queue hands over rows,
    and a run whose client left then streamed on for ever without recording its outcome
    (tests/fuzz/test_agui_fuzz.py found it)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await news.get()
    while not news.empty():
        news.get_nowait()


def _json(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"))


async def _actor(request: HttpRequest) -> tuple[services.Actor | None, int, str]:
    header = request.headers.get("Authorization")
    if header:
        try:
            principal = await database_sync_to_async(authenticate)(header)
        except Unauthenticated as exc:
            return None, 401, str(exc)
        if "write" not in principal.scopes:
            return None, 403, "needs an API key with the 'write' scope"
        return principal.actor, 200, ""
    user = await request.auser()
    if not user.is_authenticated:
        return None, 401, "sign in, or send `Authorization: Bearer <key>`"
    if CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {}) is not None:
        return None, 403, "CSRF check failed"
    if not await database_sync_to_async(user.has_perm)("a2a.operate_task"):
        return None, 403, "viewers cannot start or resume runs"
    return user_actor(user), 200, ""


@csrf_exempt  # API-key callers carry no cookie; session callers are CSRF-checked in _actor
async def run_endpoint(request: HttpRequest):
    if request.method != "POST":
        response = JsonResponse({"detail": "POST a RunAgentInput here"}, status=405)
        response["Allow"] = "POST"
        return response
    actor, status, detail = await _actor(request)
    if actor is None:
        response = JsonResponse({"detail": detail}, status=status)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="taskdeck"'
        return response
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        if int(request.headers.get("Content-Length") or 0) > limit:
            raise RequestDataTooBig
        body = jsonsafe.check(jsonsafe.loads(request.body))
    except RequestDataTooBig:
        return JsonResponse({"detail": f"request body over {limit} bytes"}, status=413)
    except jsonsafe.Unstorable as exc:
        error = {"type": "unstorable", "loc": exc.path.split(".") if exc.path else [],
                 "msg": exc.why}  # fmt: skip
        return JsonResponse({"detail": f"cannot be stored: {exc}", "errors": [error]}, status=422)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return JsonResponse({"detail": f"body is not valid JSON: {exc}"}, status=400)
    try:
        run = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        return JsonResponse({"detail": "not a RunAgentInput", "errors": errors}, status=422)
    # a dashboard user's run ends with the session it was started in (sign-out, expiry)
    session_key = None if request.headers.get("Authorization") else request.session.session_key
    response = StreamingHttpResponse(
        _stream(run, actor, session_key), content_type=EventEncoder().get_content_type()
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
