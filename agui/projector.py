"""TaskEvent → view rows + AG-UI events, inside the A2A writer's transaction.

Registered in AguiConfig.ready() as an in-transaction subscriber: what it writes commits
or rolls back with the change, so the view never drifts from the tasks (rule 3/4 of
ARCHITECTURE.md). Each change yields:
- one STATE_DELTA (RFC 6902) with the ops that turn the old view entry into the new one,
  plus pendingInterrupts additions/removals — its size depends on one task, never on how
  many tasks the view holds;
- ACTIVITY_SNAPSHOT when an input request or a pause opens, ACTIVITY_DELTA as it moves on;
- a text record for agent messages (run streams turn it into TEXT_MESSAGE_* events).
After commit, sockets are poked through the channel layer; they read the AguiEvent log.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

import jsonpatch
from ag_ui.core import ActivityDeltaEvent, ActivitySnapshotEvent, StateDeltaEvent
from django.db import transaction

from a2a import notify
from a2a.event_kinds import EventKind, is_agent_text
from a2a.formats import pause_facts, text_of, ts
from a2a.models import Message, Task, TaskEvent
from agui import view
from agui.models import AguiEvent, Interrupt, ViewTask

log = logging.getLogger(__name__)
VIEW_GROUP = "agui-view"
# The AG-UI run on whose behalf the current A2A write happens (set by the run bridge), so
# the view's lastRunId changes in the same delta as the task. Never passed to a2a.
CURRENT_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar("agui_run", default=None)
TEXT = "TEXT_MESSAGE"  # AguiEvent.type of an agent message (expanded by run streams)
SUMMARY_CHARS = 200


def _dump(event) -> dict[str, Any]:
    return event.model_dump(mode="json", by_alias=True)


def _prefixed(ops: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    out = []
    for op in ops:
        op = dict(op)
        op["path"] = prefix + op["path"]
        if "from" in op:
            op["from"] = prefix + op["from"]
        out.append(op)
    return out


def _summarise(values: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, value in values.items():
        if isinstance(value, dict) and "decision" in value:
            text = value["decision"] + (f": {value['comment']}" if value.get("comment") else "")
        else:
            text = str(value)
        out[name] = text[:SUMMARY_CHARS]
    return out


class _Batch:
    """The AG-UI events one TaskEvent produces, written together."""

    def __init__(self, task: Task, at) -> None:
        self.task, self.at, self.rows = task, at, []

    def add(self, type_: str, event: dict[str, Any]) -> None:
        self.rows.append(
            AguiEvent(
                task_id=self.task.id,
                task_version=self.task.version,
                type=type_,
                event=event,
                created_at=self.at,
            )
        )

    def activity_snapshot(self, interrupt: Interrupt) -> None:
        ev = ActivitySnapshotEvent(
            message_id=interrupt.interrupt_id,
            activity_type=interrupt.kind,
            content=interrupt.content,
        )
        self.add("ACTIVITY_SNAPSHOT", _dump(ev))

    def activity_change(self, interrupt: Interrupt, changes: dict[str, Any]) -> None:
        new = {**interrupt.content, **changes}
        patch = jsonpatch.make_patch(interrupt.content, new).patch
        interrupt.content = new
        if patch:
            ev = ActivityDeltaEvent(
                message_id=interrupt.interrupt_id, activity_type=interrupt.kind, patch=patch
            )
            self.add("ACTIVITY_DELTA", _dump(ev))


def on_task_event(event: TaskEvent) -> None:
    task: Task = event.task
    batch = _Batch(task, event.created_at)
    current = ViewTask.objects.filter(task_id=task.id).first()
    previous = current.entry if current else None
    ops: list[dict[str, Any]] = []
    title = None
    if previous is None:
        first = task.messages.order_by("seq").first()
        title = text_of(first.parts if first else None)[: view.TITLE_CHARS]

    last_interrupt = _interrupts(event, task, batch, ops)
    status_message = _status_message(task)
    artifacts = task.artifacts.count() if event.kind == EventKind.ARTIFACT_ADDED else None
    entry = view.task_entry(
        task,
        status_message=status_message,
        previous=previous,
        title=title,
        last_interrupt_id=last_interrupt,
        artifacts=artifacts,
    )
    if CURRENT_RUN.get() is not None:
        entry["lastRunId"] = CURRENT_RUN.get()
    path = view.task_path(task.id)
    if previous is None:
        ops.insert(0, {"op": "add", "path": path, "value": entry})
    else:
        ops[:0] = _prefixed(jsonpatch.make_patch(previous, entry).patch, path)
    if ops:
        batch.add("STATE_DELTA", _dump(StateDeltaEvent(delta=ops)))
    if is_agent_text(event.kind, event.data):
        msg = Message.objects.filter(task=task, seq=event.data.get("messageSeq")).first()
        if msg is not None and text_of(msg.parts):
            batch.add(
                TEXT,
                {"messageId": f"msg-{task.id}-{msg.seq}", "text": text_of(msg.parts)},
            )
    # The writer holds the task's row lock, so nobody else writes this view row now: a
    # plain insert or update (update_or_create would add a locking read and two savepoints
    # to every event).
    row = {"entry": entry, "status": task.state, "version": task.version}
    if current is None:
        ViewTask.objects.create(task_id=task.id, updated_at=task.updated_at, **row)
    else:
        ViewTask.objects.filter(task_id=task.id).update(updated_at=task.updated_at, **row)
    AguiEvent.objects.bulk_create(batch.rows)
    if batch.rows:
        transaction.on_commit(_poke)


def _status_message(task: Task) -> Message | None:
    if task.status_message_id is None:
        return None
    return Message.objects.filter(pk=task.status_message_id).first()


def _interrupts(event: TaskEvent, task: Task, batch: _Batch, ops: list) -> str | None:
    """Open, move on or close the interrupts this event touches; returns a new
    lastInterruptId when an input request opens."""
    kind, data, at = event.kind, event.data or {}, event.created_at
    if kind == EventKind.INPUT_REQUESTED:
        iid = f"input-{task.id}-{data['number']}"
        request = task.input_request or {}
        explanation = ""
        msg = _status_message(task)
        if msg is not None:
            explanation = text_of(msg.parts)
        interrupt = Interrupt.objects.create(
            interrupt_id=iid,
            task=task,
            kind=Interrupt.Kind.INPUT_REQUEST,
            request_id=data.get("requestId", ""),
            reason="input_required",
            content={
                "stage": "awaiting_input",
                "taskId": task.id,
                "request": request,
                "explanation": explanation,
                "requestedAt": ts(at),
            },
            created_at=at,
        )
        batch.activity_snapshot(interrupt)
        ops.append(
            {
                "op": "add",
                "path": view.pending_path(iid),
                "value": view.pending_entry(
                    iid, task.id, interrupt.request_id, "input_required", request.get("title")
                ),
            }
        )
        return iid
    if kind == EventKind.INPUT_PROVIDED:
        for interrupt in _open(task, Interrupt.Kind.INPUT_REQUEST):
            if interrupt.request_id and interrupt.request_id != data.get("requestId"):
                continue
            _close(interrupt, batch, ops, at)
            batch.activity_change(
                interrupt,
                {
                    "stage": "working",
                    "decision": data.get("decision", "provided"),
                    "values": _summarise(data.get("values") or {}),
                    "answeredBy": event.actor,
                    "answeredAt": ts(at),
                },
            )
            interrupt.save(update_fields=["content", "pending", "resolved_at"])
    if kind in (EventKind.PAUSED, EventKind.PARKED):
        if data.get("supersedes"):
            for interrupt in Interrupt.objects.filter(interrupt_id=data["supersedes"]):
                _close(interrupt, batch, None, at)
                batch.activity_change(interrupt, {"stage": "superseded"})
                interrupt.save(update_fields=["content", "pending", "resolved_at"])
        susp = task.current_suspension
        pause = pause_facts(susp) or {}
        interrupt = Interrupt.objects.create(
            interrupt_id=data["handle"],
            task=task,
            kind=Interrupt.Kind.PAUSE,
            reason="a2a:paused",
            content={"stage": "paused", "taskId": task.id, **pause},
            created_at=at,
        )
        batch.activity_snapshot(interrupt)
    if kind in (
        EventKind.RESUMED,
        EventKind.TIMED_OUT,
        EventKind.CANCELED,
        EventKind.COMPLETED,
        EventKind.FAILED,
        EventKind.REJECTED,
    ):
        for interrupt in _open(task, Interrupt.Kind.PAUSE):
            stage = {"resumed": "resumed", "timed_out": "timed_out"}.get(kind, "canceled")
            changes: dict[str, Any] = {"stage": stage, "endedAt": ts(at)}
            if kind == EventKind.RESUMED:
                changes.update(
                    cause=data.get("cause"),
                    hadResumeInput=data.get("hadResumeInput"),
                    resumedBy=event.actor,
                )
            _close(interrupt, batch, None, at)
            batch.activity_change(interrupt, changes)
            interrupt.save(update_fields=["content", "pending", "resolved_at"])
    if kind in (EventKind.COMPLETED, EventKind.FAILED, EventKind.REJECTED, EventKind.CANCELED):
        for interrupt in _open(task, Interrupt.Kind.INPUT_REQUEST):  # never answered
            _close(interrupt, batch, ops, at)
            batch.activity_change(interrupt, {"stage": "withdrawn", "decision": None})
            interrupt.save(update_fields=["content", "pending", "resolved_at"])
        for interrupt in Interrupt.objects.filter(
            task=task, kind=Interrupt.Kind.INPUT_REQUEST, content__stage="working"
        ):
            final = "completed" if kind == EventKind.COMPLETED else kind
            batch.activity_change(interrupt, {"stage": final})
            interrupt.save(update_fields=["content"])
    return None


def _open(task: Task, kind: str) -> list[Interrupt]:
    return list(Interrupt.objects.filter(task=task, kind=kind, pending=True))


def _close(interrupt: Interrupt, batch: _Batch, ops: list | None, at) -> None:
    interrupt.pending = False
    interrupt.resolved_at = at
    if ops is not None and interrupt.kind == Interrupt.Kind.INPUT_REQUEST:
        ops.append({"op": "remove", "path": view.pending_path(interrupt.interrupt_id)})


def _poke() -> None:
    """After commit: wake every process's Tailer. Bounded like an announcement (a frozen
    Redis must not hold the writer; a2a.notify.send): a lost poke only means the Tailers
    find the rows on their next poll."""
    notify.send(VIEW_GROUP, {"type": "agui.poke"})
