"""A task's events as A2A stream items (message/stream, tasks/resubscribe, push bodies).

The TaskEvent log is the stream: every item carries its TaskEvent id, so a client that
reconnects with a cursor (`Last-Event-ID`, `metadata.lastEventId`) gets exactly what it
missed, in order. Events of one task are appended under its row lock, so their ids grow in
commit order and a cursor never skips one. `follow` yields them live; the bindings frame
them (JSON-RPC: SSE with a JSON-RPC envelope, `a2a.jsonrpc.sse`; HTTP+JSON: SSE of 1.0
StreamResponses; gRPC: StreamResponse messages).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.db import transaction

from a2a import access, conf, work
from a2a.auth import revalidate_seconds, still_valid
from a2a.db_faults import InfrastructureFault, Outage, guarded
from a2a.errors import TaskNotFound
from a2a.event_kinds import STATUS_KINDS, EventKind, is_agent_text
from a2a.formats import ts
from a2a.lifecycle import PAUSED, TERMINAL, Dialect, State
from a2a.models import Artifact, Message, Task, TaskEvent
from a2a.prepared import Prepared
from a2a.selectors import get_task, task_row

from . import feed, wire
from .feed import Feed

if TYPE_CHECKING:
    from a2a.services import Actor

log = logging.getLogger(__name__)

# A stream ends after the event that moves a task to one of these states: the task is
# over, or its turn is (the client answers with a new request, as A2A clients expect).
FINAL_STATES = TERMINAL | {State.INPUT_REQUIRED, State.AUTH_REQUIRED}
# how often a stream's first snapshot is read again when the task changed meanwhile (plan)
CONSISTENT_READ_ATTEMPTS = 3


@dataclass(frozen=True)
class StreamPlan:
    """What a streaming method asks the view to stream."""

    task_id: str
    cursor: int  # stream events with a larger id
    first: dict[str, Any] | None  # the Task event sent first, or None on a resumed stream
    # Subscriptions end only when the task ends; a message stream ends with its turn
    # (input-required / auth-required too), as A2A clients expect.
    until_terminal: bool = False
    # who the stream is for: the binding re-checks the caller's key while it streams
    visible_to: Actor | None = None
    dialect: Dialect = Dialect.RFC  # the pause dialect its items are written in
    context_id: str | None = None  # the task's (its items carry it): not read again per batch

    def ends_at(self, state: str) -> bool:
        return state in (TERMINAL if self.until_terminal else FINAL_STATES)


def plan(
    task_id: str,
    dialect: Dialect,
    last_event_id: int | None,
    *,
    until_terminal: bool = False,
    visible_to: Actor | None = None,
) -> StreamPlan:
    """The task first, then the cursor at the last event the snapshot includes (events of a
    task carry its version, and versions grow in commit order): nothing is sent twice (an
    artifact append sent again would double its part) and nothing is lost. A task
    `visible_to` may not see is not found."""
    if last_event_id is not None:
        mine = access.visible(Task.objects.filter(pk=task_id), visible_to)
        context_id = mine.values_list("context_id", flat=True).first()
        if context_id is None:
            raise TaskNotFound(task_id)
        return StreamPlan(
            task_id, last_event_id, None, until_terminal, visible_to, dialect, context_id
        )
    for _ in range(CONSISTENT_READ_ATTEMPTS):
        # The task, its messages and its artifacts are read by three statements, each of
        # which sees what was committed when it ran: a change committed between them (an
        # artifact appended) would be in the snapshot *and* after the cursor, so sent
        # twice. Every change bumps the version, so an unchanged version after the reads
        # proves they saw one state; otherwise read again.
        view = get_task(task_id, visible_to=visible_to)
        if _AT_VERSION.first(id=task_id, version=view.task.version):
            break
    else:
        with transaction.atomic():  # a task changing faster than it can be read: hold it
            Task.objects.select_for_update().filter(pk=task_id).exists()
            view = get_task(task_id, visible_to=visible_to)
    last = _LAST_EVENT_UP_TO.first(task=task_id, version=view.task.version)
    cursor = last[0] if last else 0
    first = wire.task(view, dialect)
    return StreamPlan(
        task_id, cursor, first, until_terminal, visible_to, dialect, view.task.context_id
    )


# Read by every streaming send and subscription: compiled once (a2a/prepared.py says why).
_AT_VERSION = Prepared(
    lambda id, version: Task.objects.filter(pk=id, version=version).values_list("pk")[:1],
    "id",
    "version",
    ints=("version",),
)
_LAST_EVENT_UP_TO = Prepared(
    lambda task, version: (
        TaskEvent.objects.filter(task_id=task, task_version__lte=version)
        .order_by("-id")
        .values_list("id")[:1]
    ),
    "task",
    "version",
    ints=("version",),
)


EVENTS_PER_READ = 200
# Read at every wake-up of every stream: compiled once (a2a/prepared.py says why).
_EVENTS_AFTER = Prepared(
    lambda task, cursor: TaskEvent.objects.filter(task_id=task, id__gt=cursor).order_by("id")[
        :EVENTS_PER_READ
    ],
    "task",
    "cursor",
    ints=("cursor",),
)


def events_after(
    task_id: str,
    cursor: int,
    dialect: Dialect,
    limit: int = EVENTS_PER_READ,
    *,
    context_id: str | None = None,
) -> list[tuple[int, dict[str, Any], bool]]:
    """(event id, A2A event, final) for the task's events after `cursor`: one query when
    there are none; else also the task's row (not when the caller knows its `context_id`,
    all the items need of it), the messages the events carry and the artifacts they add,
    each only when some event needs it."""
    events = (
        _EVENTS_AFTER.fetch(task=task_id, cursor=cursor)
        if limit == EVENTS_PER_READ and type(cursor) is int
        else list(TaskEvent.objects.filter(task_id=task_id, id__gt=cursor).order_by("id")[:limit])
    )
    if not events:
        return []
    if context_id is None:
        row = task_row(task_id)
        if row is None:
            raise Task.DoesNotExist(task_id)
        context_id = row.context_id
    seqs = {seq for e in events if (seq := e.data.get("messageSeq"))}
    if not seqs:
        messages = {}
    elif len(seqs) == 1 and type(seq := next(iter(seqs))) is int:
        messages = {m.seq: m for m in _MESSAGE.fetch(task=task_id, seq=seq)}
    else:
        messages = {m.seq: m for m in Message.objects.filter(task_id=task_id, seq__in=seqs)}
    artifact_ids = {e.data.get("artifactId") for e in events if e.kind == EventKind.ARTIFACT_ADDED}
    artifacts = (
        {
            a.artifact_id: a
            for a in Artifact.objects.filter(task_id=task_id, artifact_id__in=artifact_ids)
        }
        if artifact_ids
        else {}
    )
    read = _Read(_TaskIds(task_id, context_id), messages, artifacts, dialect)
    out: list[tuple[int, dict[str, Any], bool]] = []
    for e in events:
        item = ITEMS.get(e.kind, _not_streamed)(e, read)
        if item is not None:
            out.append((e.pk, item, item.get("final", False)))
    return out


_MESSAGE = Prepared(
    lambda task, seq: Message.objects.filter(task_id=task, seq=seq),
    "task",
    "seq",
    ints=("seq",),
)


@dataclass(frozen=True)
class _TaskIds:
    """What the items say of their task (as wire.message reads a Task: id, context_id)."""

    id: str
    context_id: str


@dataclass(frozen=True)
class _Read:
    """What `events_after` read for a batch of events, and the dialect they are shown in."""

    task: _TaskIds
    messages: dict[int, Message]
    artifacts: dict[str, Artifact]
    dialect: Dialect


def _artifact_update(e: TaskEvent, read: _Read) -> dict[str, Any] | None:
    a = read.artifacts.get(e.data.get("artifactId"))
    if a is None:
        return None
    body = wire.artifact(a)
    start = e.data.get("partsFrom", 0)
    count = e.data.get("partsCount", len(a.parts) - start)
    body["parts"] = a.parts[start : start + count]  # only what this event added
    return {
        "kind": "artifact-update",
        "taskId": read.task.id,
        "contextId": read.task.context_id,
        "artifact": body,
        "append": bool(e.data.get("append")),
        "lastChunk": False,
    }


def _status_update(e: TaskEvent, read: _Read, meta: dict[str, Any] | None = None) -> dict:
    """The task's status as the event left it (with the agent's message, if it said
    something); `final` when it ends a message stream (FINAL_STATES)."""
    task, state = read.task, e.to_state
    shown = wire.BINDU_SUSPENDED if read.dialect is Dialect.BINDU and state in PAUSED else state
    status: dict[str, Any] = {"state": shown, "timestamp": ts(e.created_at)}
    msg = read.messages.get(e.data.get("messageSeq"))
    if msg is not None and msg.role == "agent":
        status["message"] = wire.message(msg, task)
    item = {
        "kind": "status-update",
        "taskId": task.id,
        "contextId": task.context_id,
        "status": status,
        "final": state in FINAL_STATES,
        "_state": state,  # the stored state (Bindu shows "suspended"); dropped on send
    }
    if meta is not None:
        item["metadata"] = meta
    return item


def _agent_text(e: TaskEvent, read: _Read) -> dict[str, Any] | None:
    """Agent text is a status update carrying its message; a user's message is not
    streamed (the client sent it)."""
    return _status_update(e, read) if is_agent_text(e.kind, e.data) else None


def _paused(e: TaskEvent, read: _Read) -> dict[str, Any]:
    data = e.data or {}
    meta = {
        "state": e.to_state,
        "handle": data.get("handle"),
        "reason": e.reason,
        "initiator": data.get("initiator"),
        "pausedAt": ts(e.created_at),
        "conditions": data.get("conditions"),
        "deadline": data.get("deadline"),
    }
    return _status_update(e, read, meta)


def _resumed(e: TaskEvent, read: _Read) -> dict[str, Any]:
    data = e.data or {}
    meta = {
        "state": e.to_state,
        "previousState": e.from_state,
        "cause": data.get("cause"),
        "hadResumeInput": data.get("hadResumeInput"),
        "continueTranscript": data.get("continueTranscript"),
        "resumedAt": ts(e.created_at),
    }
    return _status_update(e, read, meta)


def _not_streamed(e: TaskEvent, read: _Read) -> None:
    """Not an A2A stream item (the task's snapshot and the dashboard show it)."""
    return None


# What each kind of event is on an A2A stream (and in a push body: a2a.push.delivery's
# `deliverable` is the same rule). Every status event (STATUS_KINDS) is a status update, a
# pause's and a resume's with their facts as metadata; every other kind has its line,
# "nothing" included (tests/test_kinds_handled.py).
StreamItem = Callable[[TaskEvent, _Read], dict[str, Any] | None]
ITEMS: dict[EventKind, StreamItem] = {
    **dict.fromkeys(STATUS_KINDS, _status_update),
    EventKind.PAUSED: _paused,
    EventKind.PARKED: _paused,
    EventKind.RESUMED: _resumed,
    EventKind.CREATED: _not_streamed,  # the stream's first item is the task itself
    EventKind.MESSAGE_ADDED: _agent_text,
    EventKind.PROGRESS: _not_streamed,
    EventKind.ARTIFACT_ADDED: _artifact_update,
    EventKind.RETRYING: _not_streamed,
    EventKind.PICKED_UP: _not_streamed,
    EventKind.TURN_ENDED: _not_streamed,
    EventKind.TOOL_CALL: _not_streamed,
    EventKind.HOST_NOTE: _not_streamed,
}


def view_state(task_dict: dict[str, Any]) -> str:
    state = task_dict["status"]["state"]
    return State.PAUSED_BY_CLIENT if state == wire.BINDU_SUSPENDED else state


def on_the_wire(item: dict[str, Any]) -> dict[str, Any]:
    """A stream item as clients see it: without the internal `_state`."""
    return {k: v for k, v in item.items() if k != "_state"}


# --- Following a stream (every binding frames these items its own way) ----------------------

KEEPALIVE = "keepalive"  # nothing happened for STREAM_KEEPALIVE_SECONDS: SSE sends a comment
REVOKED = "revoked"  # the caller's key was revoked while streaming: the stream ends
# the database stayed unreachable for STREAM_OUTAGE_SECONDS: the stream ends with an error
UNAVAILABLE = "unavailable"
# how often a stream tries its read again while the database is unreachable: a stream goes
# on at most this long (plus one read) after the database is back
OUTAGE_RETRY_SECONDS = 1.0


async def follow(sp: StreamPlan) -> AsyncIterator[tuple[int | None, dict[str, Any]] | str]:
    """The stream's items in order, as (event id, 0.3 item) — the first snapshot's id is
    the cursor — or KEEPALIVE / REVOKED / UNAVAILABLE. `final` is set on the item that ends
    the stream. Idle, it yields KEEPALIVE every STREAM_KEEPALIVE_SECONDS.

    While this process runs the task (an inline agent's run, started by this very send:
    a2a.work.running_here), the stream waits for the run itself, as a blocking send does
    (a2a.runtime.settle), reading the log (its own reads) when it ends and at least every
    poll interval meanwhile: a run that ends the turn costs its stream one read of the log
    and no feed, Listener or wake-up per commit; a longer one shows its progress every poll
    interval. Otherwise, and once that run is over, the stream reads the log once more
    and, unless that read ended it (a run finished the turn; a reconnecting client asked
    for the rest of an ended task), follows the task's feed in this process
    (a2a/protocol/feed.py: one Listener and one small poll per task however many streams
    follow it): it reads again at once through the feed, so a commit between its last read
    and its joining is not left to the poll, and then whenever the feed says the log grew,
    the events after its cursor, in one read shared by every stream at the same cursor.
    Every item is read from the log, in order, after its commit.

    A database outage (a2a.db_faults: a restart, a failover, terminated backends) does not
    end the stream at once, whether its own read failed or the feed's shared one (the feed
    wakes its streams when its poll fails, and each reads from its own cursor): the read
    is tried again every OUTAGE_RETRY_SECONDS, with keep-alives meanwhile, from the cursor
    the stream holds, so once the database is back the stream goes on with nothing lost or
    repeated. An outage longer than STREAM_OUTAGE_SECONDS ends it with UNAVAILABLE (the
    client reconnects with its last event id). Any other error, its own read's or the
    feed's, is raised, for the binding to end the stream with an error frame (issue 31: it
    used to leave the connection open and silent)."""
    settings = conf.TASKDECK
    poll, keepalive = settings.stream_poll_seconds, settings.stream_keepalive_seconds
    outage = settings.stream_outage_seconds
    fetch = database_sync_to_async(guarded(events_after), thread_sensitive=False)
    valid = database_sync_to_async(guarded(still_valid), thread_sensitive=False)
    loop = asyncio.get_running_loop()
    cursor = sp.cursor
    caller, every = sp.visible_to, revalidate_seconds()
    check_at = loop.time() + every
    joined = contextlib.AsyncExitStack()
    news: Feed | None = None  # the task's feed, followed once this process's run is over
    checked = -1  # the feed's newest event id before this stream's last read (-1: read now)
    down = Outage(f"stream of task {sp.task_id}", loop.time, log)
    try:
        if sp.first is not None:
            yield cursor, sp.first
            if sp.ends_at(view_state(sp.first)):
                return
        run = work.running_here(sp.task_id)
        idle = 0.0
        if run is not None:  # its first events are yet to come: read when it ends
            started = loop.time()
            await work.run_ended(run, min(poll, keepalive))
            idle += loop.time() - started
        while True:
            try:
                if caller is not None and loop.time() >= check_at:
                    if not await valid(caller):
                        yield REVOKED
                        return
                    check_at = loop.time() + every
                if news is None:
                    batch = await fetch(sp.task_id, cursor, sp.dialect, context_id=sp.context_id)
                elif news.newest > checked:
                    checked, at = news.newest, cursor

                    def read(at: int = at) -> Awaitable[list]:
                        return fetch(sp.task_id, at, sp.dialect, context_id=sp.context_id)

                    batch = await news.items(read, at, sp.dialect)
                else:
                    batch = []
            except InfrastructureFault as fault:
                checked = -1  # the retry reads from the cursor, whatever the feed knows
                if down.failed(fault) >= outage:
                    log.warning("stream of task %s: the database is still down; ends", sp.task_id)
                    yield UNAVAILABLE
                    return
                if idle >= keepalive:
                    idle = 0.0
                    yield KEEPALIVE
                pause = max(0.01, min(OUTAGE_RETRY_SECONDS, keepalive - idle, outage))
                await asyncio.sleep(pause)
                idle += pause
                continue
            down.over()
            for event_id, item, _ in batch:
                cursor = event_id
                ends = item.get("kind") == "status-update" and sp.ends_at(item["_state"])
                if "final" in item:
                    item = {**item, "final": ends}
                yield event_id, on_the_wire(item)
                if ends:
                    return
            if batch:
                idle, checked = 0.0, -1  # read on at once: a batch stops at EVENTS_PER_READ
            running = run is not None and not run.done()
            if not running and news is None:
                news = await joined.enter_async_context(feed.following(sp.task_id))
                continue  # read again now that the feed wakes this stream
            if batch and not running:
                continue
            if idle >= keepalive:
                idle = 0.0
                yield KEEPALIVE
            started = loop.time()
            if running:
                await work.run_ended(run, max(0.01, min(poll, keepalive - idle)))
            else:
                # no timer of its own for the log: the feed wakes it; one only for the
                # keep-alive and the caller's re-check
                timeout = keepalive - idle
                if caller is not None:
                    timeout = min(timeout, check_at - started)
                await news.wait(checked, max(timeout, 0.01))
                if news.failure is not None:
                    checked = -1  # the feed's read failed: this stream's own read tells
            idle += loop.time() - started
    finally:
        await joined.aclose()
