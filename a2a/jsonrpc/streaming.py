"""SSE streams of a task's events (message/stream, tasks/resubscribe).

The TaskEvent log is the stream: every A2A event sent carries its TaskEvent id as the SSE
`id`, so a client that reconnects with `Last-Event-ID` (or `metadata.lastEventId`) gets
exactly what it missed, in order, then live events. Events of one task are appended under
its row lock, so their ids grow in commit order and a cursor never skips one.

Waking up: after commit, services' events are announced on the channel layer (group
`a2a-task-<id>`); a stream waits for that announcement or, at the latest, polls the log
every STREAM_POLL_SECONDS — the in-memory layer cannot hear a worker process, Redis can.
The layer only ever wakes a waiter early: when Redis is away, waiters poll (see Listener).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from a2a.lifecycle import PAUSED, TERMINAL, Dialect, State
from a2a.models import Artifact, Message, Task, TaskEvent
from a2a.selectors import get_task

from . import wire

log = logging.getLogger(__name__)

# Events that change what a subscriber sees; "created" is covered by the first Task event.
STATUS_KINDS = {
    "started",
    "input_requested",
    "input_provided",
    "paused",
    "parked",
    "resumed",
    "timed_out",
    "completed",
    "failed",
    "rejected",
    "canceled",
}
# A stream ends after the event that moves a task to one of these states: the task is
# over, or its turn is (the client answers with a new request, as A2A clients expect).
FINAL_STATES = TERMINAL | {State.INPUT_REQUIRED, State.AUTH_REQUIRED}
KEEPALIVE_SECONDS = 15.0
RETRY_SECONDS = 1.0  # how often a Listener that lost the channel layer tries to re-join
LAYER_CALL_SECONDS = 1.0  # the most one group_add/group_discard may take (a hung Redis)
REJOIN_SECONDS = 60.0  # a joined Listener renews its membership this often


def group_name(task_id: str) -> str:
    return f"a2a-task-{task_id}"[:99]


def announce(event: TaskEvent) -> None:
    """On-commit subscriber: tell streams of this task that its log grew."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(event.task_id), {"type": "task.event", "id": event.pk}
        )
    except Exception:  # a stream falls back to polling; the change is committed anyway
        log.warning("could not announce event %s on the channel layer", event.pk)


@dataclass(frozen=True)
class StreamPlan:
    """What a streaming method asks the view to stream."""

    task_id: str
    cursor: int  # stream events with a larger id
    first: dict[str, Any] | None  # the Task event sent first, or None on a resumed stream
    # Subscriptions end only when the task ends; a message stream ends with its turn
    # (input-required / auth-required too), as A2A clients expect.
    until_terminal: bool = False

    def ends_at(self, state: str) -> bool:
        return state in (TERMINAL if self.until_terminal else FINAL_STATES)


def plan(
    task_id: str, dialect: Dialect, last_event_id: int | None, *, until_terminal: bool = False
) -> StreamPlan:
    """The task first, then the cursor at the last event the snapshot includes (events of a
    task carry its version, and versions grow in commit order): nothing is sent twice (an
    artifact append sent again would double its part) and nothing is lost."""
    if last_event_id is not None:
        if not Task.objects.filter(pk=task_id).exists():
            from a2a.errors import TaskNotFound

            raise TaskNotFound(task_id)
        return StreamPlan(task_id, last_event_id, None, until_terminal)
    view = get_task(task_id)
    cursor = (
        TaskEvent.objects.filter(task_id=task_id, task_version__lte=view.task.version)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    ) or 0
    first = wire.task(view, dialect)
    return StreamPlan(task_id, cursor, first, until_terminal)


def _status_metadata(event: TaskEvent) -> dict[str, Any] | None:
    data = event.data or {}
    if event.kind in ("paused", "parked"):
        return {
            "state": event.to_state,
            "handle": data.get("handle"),
            "reason": event.reason,
            "initiator": data.get("initiator"),
            "pausedAt": wire.ts(event.created_at),
            "conditions": data.get("conditions"),
            "deadline": data.get("deadline"),
        }
    if event.kind == "resumed":
        return {
            "state": event.to_state,
            "previousState": event.from_state,
            "cause": data.get("cause"),
            "hadResumeInput": data.get("hadResumeInput"),
            "continueTranscript": data.get("continueTranscript"),
            "resumedAt": wire.ts(event.created_at),
        }
    return None


def events_after(
    task_id: str, cursor: int, dialect: Dialect, limit: int = 200
) -> list[tuple[int, dict[str, Any], bool]]:
    """(event id, A2A event, final) for the task's events after `cursor`; three queries."""
    events = list(TaskEvent.objects.filter(task_id=task_id, id__gt=cursor).order_by("id")[:limit])
    if not events:
        return []
    task = Task.objects.get(pk=task_id)
    seqs = {e.data.get("messageSeq") for e in events if e.data.get("messageSeq")}
    messages = {m.seq: m for m in Message.objects.filter(task_id=task_id, seq__in=seqs)}
    artifact_ids = {e.data.get("artifactId") for e in events if e.kind == "artifact_added"}
    artifacts = {
        a.artifact_id: a
        for a in Artifact.objects.filter(task_id=task_id, artifact_id__in=artifact_ids)
    }
    out: list[tuple[int, dict[str, Any], bool]] = []
    for e in events:
        if e.kind == "artifact_added":
            a = artifacts.get(e.data.get("artifactId"))
            if a is None:
                continue
            body = wire.artifact(a)
            start = e.data.get("partsFrom", 0)
            count = e.data.get("partsCount", len(a.parts) - start)
            body["parts"] = a.parts[start : start + count]  # only what this event added
            item = {
                "kind": "artifact-update",
                "taskId": task.id,
                "contextId": task.context_id,
                "artifact": body,
                "append": bool(e.data.get("append")),
                "lastChunk": False,
            }
            out.append((e.pk, item, False))
            continue
        is_status = e.kind in STATUS_KINDS
        is_agent_text = e.kind == "message_added" and e.data.get("role") == "agent"
        if not (is_status or is_agent_text):
            continue
        state = e.to_state
        shown = wire.BINDU_SUSPENDED if dialect is Dialect.BINDU and state in PAUSED else state
        status: dict[str, Any] = {"state": shown, "timestamp": wire.ts(e.created_at)}
        msg = messages.get(e.data.get("messageSeq"))
        if msg is not None and msg.role == "agent":
            status["message"] = wire.message(msg, task)
        final = state in FINAL_STATES
        item = {
            "kind": "status-update",
            "taskId": task.id,
            "contextId": task.context_id,
            "status": status,
            "final": final,
            "_state": state,  # the stored state (Bindu shows "suspended"); dropped on send
        }
        meta = _status_metadata(e)
        if meta is not None:
            item["metadata"] = meta
        out.append((e.pk, item, final))
    return out


def view_state(task_dict: dict[str, Any]) -> str:
    state = task_dict["status"]["state"]
    return State.PAUSED_BY_CLIENT if state == wire.BINDU_SUSPENDED else state


def on_the_wire(item: dict[str, Any]) -> dict[str, Any]:
    """A stream item as clients see it: without the internal `_state`."""
    return {k: v for k, v in item.items() if k != "_state"}


def _frame(rpc_id: Any, result: dict[str, Any], event_id: int | None) -> bytes:
    result = on_the_wire(result)
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}, separators=(",", ":"))
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {body}\n\n".encode()


async def stream(
    sp: StreamPlan, rpc_id: Any, dialect: Dialect, *, wrap=None
) -> AsyncIterator[bytes]:
    """The SSE body. `wrap` turns a 0.3 event into another wire version's (A2A 1.0)."""
    wrap = wrap or (lambda item: item)
    poll = float(settings.TASKDECK.get("STREAM_POLL_SECONDS", 0.25))
    news = Listener(group_name(sp.task_id))
    fetch = database_sync_to_async(events_after, thread_sensitive=False)
    loop = asyncio.get_running_loop()
    cursor = sp.cursor
    try:
        await news.join()
        if sp.first is not None:
            yield _frame(rpc_id, wrap(sp.first), cursor)
            if sp.ends_at(view_state(sp.first)):
                return
        idle = 0.0
        while True:
            batch = await fetch(sp.task_id, cursor, dialect)
            for event_id, item, _ in batch:
                cursor = event_id
                ends = item.get("kind") == "status-update" and sp.ends_at(item["_state"])
                if "final" in item:
                    item = {**item, "final": ends}
                yield _frame(rpc_id, wrap(item), event_id)
                if ends:
                    return
            if batch:
                idle = 0.0
                continue
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield b": keepalive\n\n"
            started = loop.time()
            await news.wait(poll)
            idle += loop.time() - started
    finally:
        await news.leave()


class _LayerTimeout(Exception):
    """A channel-layer call did not finish within its bound."""


def _drop_outcome(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: asyncio must not log it as "never retrieved"


async def _bounded(coro: Any, seconds: float) -> Any:
    """Await a channel-layer call for at most `seconds` (_LayerTimeout after that).

    Not asyncio.wait_for: redis-py turns the cancellation of a pending read into its own
    TimeoutError, which wait_for never retrieves when the waiter itself is cancelled (a
    client hung up), and asyncio then logs it as an error. Here an abandoned call is
    cancelled and its outcome consumed, whatever it is."""
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_drop_outcome)
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_drop_outcome)
        raise _LayerTimeout
    return task.result()


class Listener:
    """A channel in one group of the channel layer, for a waiter that must outlive the
    layer's outages (streams, blocking sends, AG-UI runs, the AG-UI Tailer).

    The layer only wakes waiters early; the database holds the truth. So when Redis goes
    away (a restart, a failover) no layer error escapes: waiting degrades to sleeping (the
    caller re-reads the database, as it does with the in-memory layer), and the listener
    tries to re-join every RETRY_SECONDS, since a restarted Redis has forgotten the group.
    Re-joining ends the wait at once: what was announced meanwhile is lost, so the caller
    re-reads.
    """

    def __init__(self, group: str) -> None:
        self.layer = get_channel_layer()
        self.group = group
        self.channel: str | None = None
        self.joined = False
        self.retry_at = 0.0
        self.rejoin_at = 0.0

    async def join(self) -> bool:
        """Join the group; False when there is no layer or it failed (`wait` retries)."""
        if self.layer is None:
            return False
        if self.channel is None:
            self.channel = await self.layer.new_channel()
        loop = asyncio.get_running_loop()
        for _ in range(2):  # after a restart, a pooled connection fails once, then reconnects
            try:
                await _bounded(self.layer.group_add(self.group, self.channel), LAYER_CALL_SECONDS)
            except Exception as exc:  # _LayerTimeout included: a hung Redis must not stall us
                log.debug("could not join %s on the channel layer: %r", self.group, exc)
            else:
                self.joined = True
                self.rejoin_at = loop.time() + REJOIN_SECONDS
                return True
        self.retry_at = loop.time() + RETRY_SECONDS
        return False

    async def wait(self, timeout: float) -> bool:
        """Sleep until the group hears news, or `timeout`. True when woken early (news, or
        back in the group after an outage): the caller should re-read the log."""
        loop = asyncio.get_running_loop()
        if self.layer is None:
            await asyncio.sleep(timeout)
            return False
        if not self.joined:
            if loop.time() >= self.retry_at and await self.join():
                log.info("back on the channel layer: %s", self.group)
                return True
            await asyncio.sleep(max(0.0, min(timeout, self.retry_at - loop.time())))
            return False
        # Memberships expire (Redis's group_expiry; the in-memory layer drops a channel whose
        # queued message expired): renew now and then; failing to is an outage.
        if loop.time() >= self.rejoin_at and not await self.join():
            self.joined = False
            return False
        deadline = loop.time() + timeout
        try:
            await _bounded(self.layer.receive(self.channel), timeout)
            return True
        except _LayerTimeout:
            return False
        except Exception as exc:  # Redis went away: poll until it is back
            log.warning("lost the channel layer (%s); polling meanwhile: %s", self.group, exc)
            self.joined = False
            self.retry_at = loop.time() + RETRY_SECONDS
            await asyncio.sleep(max(0.0, min(deadline, self.retry_at) - loop.time()))
            return False

    async def leave(self) -> None:
        if self.layer is None or self.channel is None:
            return
        self.joined = False
        try:
            await _bounded(self.layer.group_discard(self.group, self.channel), LAYER_CALL_SECONDS)
        except Exception:  # Redis is away: it forgot the group, or the entry will expire
            log.debug("group_discard failed for %s", self.group)
