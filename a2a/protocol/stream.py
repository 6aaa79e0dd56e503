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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.db import transaction

from a2a import access
from a2a.auth import revalidate_seconds, still_valid
from a2a.errors import TaskNotFound
from a2a.event_kinds import STATUS_KINDS, EventKind, is_agent_text
from a2a.formats import ts
from a2a.lifecycle import PAUSED, TERMINAL, Dialect, State
from a2a.models import Artifact, Message, Task, TaskEvent
from a2a.prepared import Prepared
from a2a.protocol.feed import following
from a2a.selectors import get_task, task_row

from . import wire

if TYPE_CHECKING:
    from a2a.services import Actor

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
        if not access.visible(Task.objects.filter(pk=task_id), visible_to).exists():
            raise TaskNotFound(task_id)
        return StreamPlan(task_id, last_event_id, None, until_terminal, visible_to, dialect)
    for _ in range(CONSISTENT_READ_ATTEMPTS):
        # The task, its messages and its artifacts are read by three statements, each of
        # which sees what was committed when it ran: a change committed between them (an
        # artifact appended) would be in the snapshot *and* after the cursor, so sent
        # twice. Every change bumps the version, so an unchanged version after the reads
        # proves they saw one state; otherwise read again.
        view = get_task(task_id, visible_to=visible_to)
        if Task.objects.filter(pk=task_id, version=view.task.version).exists():
            break
    else:
        with transaction.atomic():  # a task changing faster than it can be read: hold it
            Task.objects.select_for_update().filter(pk=task_id).exists()
            view = get_task(task_id, visible_to=visible_to)
    cursor = (
        TaskEvent.objects.filter(task_id=task_id, task_version__lte=view.task.version)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    ) or 0
    first = wire.task(view, dialect)
    return StreamPlan(task_id, cursor, first, until_terminal, visible_to, dialect)


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
    task_id: str, cursor: int, dialect: Dialect, limit: int = EVENTS_PER_READ
) -> list[tuple[int, dict[str, Any], bool]]:
    """(event id, A2A event, final) for the task's events after `cursor`; three queries."""
    events = (
        _EVENTS_AFTER.fetch(task=task_id, cursor=cursor)
        if limit == EVENTS_PER_READ and type(cursor) is int
        else list(TaskEvent.objects.filter(task_id=task_id, id__gt=cursor).order_by("id")[:limit])
    )
    if not events:
        return []
    task = task_row(task_id)
    if task is None:
        raise Task.DoesNotExist(task_id)
    seqs = {e.data.get("messageSeq") for e in events if e.data.get("messageSeq")}
    messages = {m.seq: m for m in Message.objects.filter(task_id=task_id, seq__in=seqs)}
    artifact_ids = {e.data.get("artifactId") for e in events if e.kind == EventKind.ARTIFACT_ADDED}
    artifacts = {
        a.artifact_id: a
        for a in Artifact.objects.filter(task_id=task_id, artifact_id__in=artifact_ids)
    }
    read = _Read(task, messages, artifacts, dialect)
    out: list[tuple[int, dict[str, Any], bool]] = []
    for e in events:
        item = ITEMS.get(e.kind, _not_streamed)(e, read)
        if item is not None:
            out.append((e.pk, item, item.get("final", False)))
    return out


@dataclass(frozen=True)
class _Read:
    """What `events_after` read for a batch of events, and the dialect they are shown in."""

    task: Task
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

KEEPALIVE_SECONDS = 15.0
KEEPALIVE = "keepalive"  # nothing happened for KEEPALIVE_SECONDS: SSE sends a comment
REVOKED = "revoked"  # the caller's key was revoked while streaming: the stream ends


async def follow(sp: StreamPlan) -> AsyncIterator[tuple[int | None, dict[str, Any]] | str]:
    """The stream's items in order, as (event id, 0.3 item) — the first snapshot's id is
    the cursor — or KEEPALIVE / REVOKED. `final` is set on the item that ends the stream.

    Waking up: the task's feed in this process (a2a/protocol/feed.py: one Listener and one
    poll per task, however many streams follow it) says when the task's log grew; the
    events after the cursor are read then, once for every stream at the same cursor."""
    fetch = database_sync_to_async(events_after, thread_sensitive=False)
    valid = database_sync_to_async(still_valid, thread_sensitive=False)
    loop = asyncio.get_running_loop()
    cursor = sp.cursor
    caller, every = sp.visible_to, revalidate_seconds()
    check_at = loop.time() + every
    async with following(sp.task_id) as news:
        if sp.first is not None:
            yield cursor, sp.first
            if sp.ends_at(view_state(sp.first)):
                return
        idle = 0.0
        checked = -1  # the feed's newest event id before the last read: read at once
        while True:
            if caller is not None and loop.time() >= check_at:
                check_at = loop.time() + every
                if not await valid(caller):
                    yield REVOKED
                    return
            batch = []
            if news.newest > checked:
                checked, at = news.newest, cursor

                def read(at=at):
                    return fetch(sp.task_id, at, sp.dialect)

                batch = await news.items(read, cursor, sp.dialect)
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
                continue
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield KEEPALIVE
            # no read of its own: the feed wakes it; a timer only for the keep-alive and
            # the caller's re-check
            started = loop.time()
            timeout = KEEPALIVE_SECONDS - idle
            if caller is not None:
                timeout = min(timeout, check_at - started)
            await news.wait(checked, max(timeout, 0.01))
            idle += loop.time() - started
