"""What a task's committed events do to the view: view rows + AG-UI events.

`agui.projection` runs this after the A2A writer's commit, in a transaction of its own
(docs/design/projection-after-commit.md, D8): for each task it holds, `project_task`
turns the task's unprojected events into one change of the view. Each change yields:
- one STATE_DELTA (RFC 6902) with the ops that turn the old view entry into the new one,
  plus pendingInterrupts additions/removals — its size depends on one task, never on how
  many tasks the view holds;
- ACTIVITY_SNAPSHOT when an input request or a pause opens, ACTIVITY_DELTA as it moves on
  and when it ends (ACTIVITIES: what each kind of event does to them; a task that ends,
  by any of ENDING_KINDS, leaves none open);
- a text record for agent messages (run streams turn it into TEXT_MESSAGE_* events).
After commit, sockets are poked through the channel layer; they read the AguiEvent log.

The view is bounded (docs/agui.md, "How big the view gets"): it holds the open tasks and
the recently finished. A finished task leaves it with a STATE_DELTA `remove` (an EVICTION
row in the log, at the view version after the task's last), written here: when a task
finishes (the newest finished push the oldest out), and from the scheduler's tick (those
finished too long ago, when nothing else changes). Finished is final (a2a.lifecycle), so
no change of the task can follow its eviction.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import jsonpatch
from ag_ui.core import ActivityDeltaEvent, ActivitySnapshotEvent, StateDeltaEvent
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from a2a import endings, notify, periodic
from a2a.event_kinds import ENDING_KINDS, EventKind, is_agent_text, is_user_message, keeps_idle
from a2a.formats import pause_facts, text_of, ts
from a2a.lifecycle import State
from a2a.models import Message, Suspension, Task, TaskEvent
from a2a.prepared import Prepared, PreparedInsert, PreparedUpdate, one_of
from agui import view
from agui.models import IN_VIEW, AguiEvent, Interrupt, ViewTask

log = logging.getLogger(__name__)
VIEW_GROUP = "agui-view"
TEXT = "TEXT_MESSAGE"  # AguiEvent.type of an agent message (expanded by run streams)
# AguiEvent.type of a finished task leaving the live view; its event is a STATE_DELTA that
# sockets send as it is. Run streams skip it: a run's snapshot is its thread, not the view.
EVICTION = "EVICTION"
EVICT_BATCH = 500  # evictions per scheduler call: a backlog (after an upgrade) drains in steps
# …and per write: a finish pushes out one task in the steady state; a writer's transaction
# never carries a backlog (the scheduler's tick does).
EVICT_IN_WRITE = 8
EVICT_EVERY_SECONDS = 1.0  # the scheduler ticks every 0.25 s; this is often enough
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
    """The AG-UI events one projection pass produces for one task, all at the task's next
    view version (ViewTask.version), written together."""

    def __init__(self, task_id: str, version: int) -> None:
        self.task_id, self.version, self.rows = task_id, version, []
        # Whether an end may find Interrupt rows to close beyond those of the state it
        # leaves (`_task_ends`): the task asked a question once (its entry's sticky
        # lastInterruptId: answered ones end with the task), its entry predates that key,
        # or this pass opened one. Most tasks end working without ever asking or pausing.
        self.interrupts = True

    def add(self, type_: str, event: dict[str, Any], at) -> None:
        self.rows.append(
            AguiEvent(
                task_id=self.task_id,
                version=self.version,
                type=type_,
                event=event,
                created_at=at,
            )
        )

    def activity_snapshot(self, interrupt: Interrupt, at) -> None:
        ev = ActivitySnapshotEvent(
            message_id=interrupt.interrupt_id,
            activity_type=interrupt.kind,
            content=interrupt.content,
        )
        self.add("ACTIVITY_SNAPSHOT", _dump(ev), at)

    def activity_change(self, interrupt: Interrupt, changes: dict[str, Any], at) -> None:
        new = {**interrupt.content, **changes}
        patch = jsonpatch.make_patch(interrupt.content, new).patch
        interrupt.content = new
        if patch:
            ev = ActivityDeltaEvent(
                message_id=interrupt.interrupt_id, activity_type=interrupt.kind, patch=patch
            )
            self.add("ACTIVITY_DELTA", _dump(ev), at)


@dataclass
class Refs:
    """What a pass's events point at, read once for all of the pass's tasks: the messages
    (by task and seq) and the suspensions (by handle). Handlers read these, never the
    task's current fields: the task may have moved on since the event (D8)."""

    messages: dict[tuple[str, int], Message] = field(default_factory=dict)
    suspensions: dict[str, Suspension] = field(default_factory=dict)

    def message(self, task_id: str, seq: Any) -> Message | None:
        return self.messages.get((task_id, seq)) if type(seq) is int else None


# every pass's two writes (its view rows, its AG-UI rows), compiled once (a2a/prepared.py)
_SAVE_VIEW = PreparedUpdate(ViewTask)
_NEW_VIEW = PreparedInsert(ViewTask)  # every new task's entry
_NEW_EVENTS = PreparedInsert(AguiEvent)
_OPEN = Prepared(
    lambda task, kind: Interrupt.objects.filter(task_id=task, kind=kind, pending=True),
    "task",
    "kind",
)
# what an ending touches: open pauses and questions, and answered questions still shown
# as being worked on (every task that ends reads it)
_TOUCHED_BY_AN_END = Prepared(
    lambda task: Interrupt.objects.filter(task_id=task).filter(
        Q(pending=True) | Q(kind=Interrupt.Kind.INPUT_REQUEST, content__stage="working")
    ),
    "task",
)


def _ended(
    event: TaskEvent, answered: TaskEvent | None, previous: dict[str, Any] | None
) -> dict[str, Any] | None:
    """How the task ended, for its view entry (a2a.endings). No query, but for a
    completion after a rejection answered in an earlier pass: then its answer, one read
    through the (task, id) index, once in the task's life."""
    if event.kind == EventKind.COMPLETED and answered is None:
        if (previous or {}).get("lastDecision") != "rejected":
            return None
        answered = (
            TaskEvent.objects.filter(task_id=event.task_id, kind=EventKind.INPUT_PROVIDED)
            .order_by("-id")
            .first()
        )
    found = endings.ending_of(event, answered)
    return found.as_json() if found is not None else None


def project_task(
    task: Task,
    current: ViewTask | None,
    events: list[TaskEvent],
    refs: Refs,
    run_id: str | None,
    new_views: list[ViewTask] | None = None,
) -> list[AguiEvent]:
    """Project `events` (the task's committed, unprojected events, in order, ending at the
    task's version as read: `task`) as one change of the view: the activities of every
    event in order, one STATE_DELTA that turns the old entry into the new one (with the
    pendingInterrupts ops of every event, in order), then the agent's text. Writes the
    view row and the Interrupt rows; returns the AG-UI rows for the caller to insert with
    the pass's others. The caller holds the task (agui.projection): nobody else writes
    this view row now, so a plain insert or update (update_or_create would add a locking
    read and two savepoints). `new_views`: a new task's view row is added to it for the
    caller to insert with the pass's others (one statement for a pass over many tasks)."""
    version = current.version + 1 if current is not None else 1
    batch = _Batch(task.id, version)
    previous = current.entry if current is not None else None
    # an entry without the key predates it: it may have asked (read at its end, to be safe)
    batch.interrupts = previous is not None and (
        "lastInterruptId" not in previous or previous["lastInterruptId"] is not None
    )
    in_view = current is not None and current.in_view
    ops: list[dict[str, Any]] = []
    title = None
    if previous is None:
        first = refs.message(task.id, 1)
        title = text_of(first.parts if first else None)[: view.TITLE_CHARS]
    last_interrupt = decision = ended = answered = None
    recount = False
    waiting = (previous or {}).get("waitingForWorkerSince")
    idle = (previous or {}).get("idleSince")
    texts: list[tuple[dict[str, Any], Any]] = []
    for event in events:
        last_interrupt = ACTIVITIES.get(event.kind, _untouched)(event, refs, batch, ops) or (
            last_interrupt
        )
        batch.interrupts = batch.interrupts or last_interrupt is not None
        recount = recount or event.kind == EventKind.ARTIFACT_ADDED
        waiting = _waiting_for_worker(event, waiting)
        if event.kind == EventKind.TURN_ENDED:
            idle = ts(event.created_at)
        elif not keeps_idle(event.kind, event.data):
            idle = None
        if event.kind == EventKind.INPUT_PROVIDED:
            decision = (event.data or {}).get("decision") or "provided"
            answered = event
        elif event.kind in ENDING_KINDS:
            ended = _ended(event, answered, previous)
        if is_agent_text(event.kind, event.data):
            msg = refs.message(task.id, event.data.get("messageSeq"))
            if msg is not None and text_of(msg.parts):
                text = {"messageId": f"msg-{task.id}-{msg.seq}", "text": text_of(msg.parts)}
                texts.append((text, event.created_at))
    at = events[-1].created_at
    entry = view.task_entry(
        task,
        version=version,
        status_message=task.status_message,
        previous=previous,
        title=title,
        last_interrupt_id=last_interrupt,
        artifacts=task.artifacts.count() if recount else None,
        waiting_for_worker_since=waiting,
        idle_since=idle if task.state == State.WORKING else None,
        decision=decision,
        ended=ended,
    )
    if run_id is not None:
        entry["lastRunId"] = run_id
    path = view.task_path(task.id)
    if not in_view:  # new (or, were finished not final, back after its eviction)
        ops.insert(0, {"op": "add", "path": path, "value": entry})
    else:
        ops[:0] = _prefixed(jsonpatch.make_patch(previous, entry).patch, path)
    batch.add("STATE_DELTA", _dump(StateDeltaEvent(delta=ops)), at)
    for text, said_at in texts:
        batch.add(TEXT, text, said_at)
    row = {
        "entry": entry,
        "status": task.state,
        "version": version,
        "in_view": True,
        "task_version": task.version,
        "event_id": events[-1].id,
        "updated_at": task.updated_at,
    }
    if current is None and new_views is not None:
        new_views.append(ViewTask(task_id=task.id, **row))
    elif current is None:
        _NEW_VIEW.insert(task_id=task.id, **row)
    else:
        _SAVE_VIEW.update(task.id, **row)
    return batch.rows


@functools.lru_cache(maxsize=16)
def _pushed_out(finished_max: int, limit: int) -> tuple[str, tuple]:
    """SQL of the finished tasks beyond the newest `finished_max` in the view, `limit` at
    most, as (task_id, version) rows: read as every task finishes, so composed once per
    bound.

    One ordered read per finished state, merged, rather than one read over all of them
    (`status IN (...) ORDER BY updated_at`): no index gives that order across several
    statuses, so the database read every live finished row's index entry and sorted them
    — on PostgreSQL together with the entries of rows already evicted, dead until VACUUM
    comes by (each eviction leaves one in this range), so a finishing writer's read grew
    with every task finished since the last vacuum: 0.5 ms at 1,000 tasks, 8 ms at 9,000
    (docs/production.md, "Scale"). Each state's read walks `viewtask_live` (in_view,
    status, updated_at) from the newest and stops after `finished_max + limit` rows,
    never reaching the dead entries, which are older than every live one."""
    newest = finished_max + limit
    parts, params = [], []
    for i, state in enumerate(view.FINISHED):
        sql, p = (
            ViewTask.objects.filter(IN_VIEW, status=state)
            .order_by("-updated_at", "-task_id")
            .values_list("task_id", "version", "updated_at")[:newest]
            .query.sql_with_params()
        )
        parts.append(f"SELECT * FROM ({sql}) AS finished_{i}")
        params.extend(p)
    columns = "pushed.task_id, pushed.version"
    order = "pushed.updated_at DESC, pushed.task_id DESC"
    sql = (
        f"SELECT {columns} FROM ({' UNION ALL '.join(parts)}) AS pushed "
        f"ORDER BY {order} LIMIT {int(limit)} OFFSET {int(finished_max)}"
    )
    return sql, tuple(params)


def insert_views(new_views: list[ViewTask]) -> None:
    """Write the new view rows of a pass over several tasks (`project_task`'s
    `new_views`): one statement, compiled once a pass rather than a round trip a task."""
    ViewTask.objects.bulk_create(new_views)


def insert_rows(rows: list[AguiEvent]) -> None:
    """Write a pass's AG-UI rows: one insert for all of them."""
    _NEW_EVENTS.insert_all(rows)


def finished_pushed_out(now: datetime) -> list[AguiEvent]:
    """One more task finished: the oldest beyond FINISHED_MAX leave now, in the pass that
    projected the finish, their deltas after its changes and in the same insert (those
    finished too long ago are the scheduler's tick's: one read less here)."""
    return _evictions(now, limit=EVICT_IN_WRITE, by_age=False)


def evict_finished(
    now: datetime | None = None, *, limit: int = EVICT_BATCH, by_age: bool = True
) -> int:
    """Take the finished tasks past the view's bound out of it; returns how many left.

    Past the bound: finished more than FINISHED_MINUTES ago, or older than the newest
    FINISHED_MAX finished. Each leaves through the projection's one path, so every socket
    gets it in order: its row is marked out of the view at the version after its task's
    last, and a STATE_DELTA `remove` is logged at that version (clients holding the task
    apply it; snapshots taken after it never held it). The update is conditional (still in
    the view, `_leave`): two evictors at once (two passes finishing tasks, or a pass and
    the scheduler) emit one removal, never two; and they take rows in one order, so they
    cannot deadlock. Safe inside a pass's transaction and alone. At
    most `limit` of each kind (pushed out, timed out — the latter only with `by_age`) per
    call."""
    with transaction.atomic(savepoint=False):
        rows = _evictions(now or timezone.now(), limit=limit, by_age=by_age)
        _NEW_EVENTS.insert_all(rows)
        if rows:
            transaction.on_commit(poke)
    return len(rows)


def _evictions(now: datetime, *, limit: int, by_age: bool) -> list[AguiEvent]:
    """evict_finished's work but the insert: the rows of the removals it made, for the
    caller to write (a pass that finished a task writes them with its own, one insert)."""
    bound = view.limits()
    with connection.cursor() as cursor:
        cursor.execute(*_pushed_out(bound.finished_max, limit))
        leaving = dict(cursor.fetchall())
    if by_age:
        cutoff = now - timedelta(minutes=bound.finished_minutes)
        expired = ViewTask.objects.filter(
            IN_VIEW, status__in=view.FINISHED, updated_at__lt=cutoff
        ).order_by("updated_at", "task_id")
        leaving.update(expired.values_list("task_id", "version")[:limit])
    rows = []
    for task_id, version in _leave(sorted(leaving)):
        delta = [{"op": "remove", "path": view.task_path(task_id)}]
        rows.append(
            AguiEvent(
                task_id=task_id,
                version=version,
                type=EVICTION,
                event=_dump(StateDeltaEvent(delta=delta)),
                created_at=now,
            )
        )
    return rows


def _leave(task_ids: list[str]) -> list[tuple[str, int]]:
    """Mark these view rows out of the view at their next version, in one statement, and
    return (task_id, new version) of those this call moved, in task id order.

    Conditional on `in_view` alone: of two evictors at once, the second waits for the
    first's row locks (PostgreSQL) or its write lock (SQLite), then finds the row out of
    the view and skips it, so each task is removed once. A finished task's entry changes
    no more (module doc), so the version it leaves at is its last plus one whoever read
    it when. Rows are locked in task id order (PostgreSQL sorts an `= ANY` array for the
    primary key's index), so two evictors cannot deadlock. One statement, not one per
    task: a blocking send's finished task is evicted once, and a per-row UPDATE built
    by the ORM was 7-8 % of the server's Python CPU under load (docs/production.md,
    "What a write costs")."""
    if not task_ids:
        return []
    table = ViewTask._meta.db_table
    where, params = one_of("task_id", task_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET in_view = %s, version = version + 1 "
            f"WHERE in_view = %s AND {where} RETURNING task_id, version",
            [False, True, *params],
        )
        return sorted(cursor.fetchall())


_EVICT_PACE = periodic.Paced(EVICT_EVERY_SECONDS)


def evict_now_and_then() -> int:
    """The scheduler's periodic hook (registered in AguiConfig.ready()): finished tasks
    must leave the view when their time is up even if no other task finishes. At most once
    per EVICT_EVERY_SECONDS per process, and again at once while a backlog remains."""
    return _EVICT_PACE.batch(lambda size: evict_finished(limit=size), EVICT_BATCH)


def _waiting_for_worker(event: TaskEvent, since: str | None) -> str | None:
    """Since when a task resumed to work waits for a worker to take its run again, or None,
    after `event` (`since`: what it was before it).

    A queued task shows its wait by its state (`submitted`, until the worker's `started`);
    a resumed one is `working` at once, so the entry says it: from the `resumed` until the
    worker's `picked_up` (a2a.runtime.executor) or anything else (the agent's output, a
    pause, the end). Only a client's message leaves the wait as it was."""
    if event.to_state != State.WORKING:
        return None
    if event.kind == EventKind.RESUMED:
        return ts(event.created_at)
    if is_user_message(event.kind, event.data):
        return since
    return None


def _request_opens(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> str | None:
    """An input request opens: its activity and a pending interrupt; it becomes the
    entry's lastInterruptId. The request and its explanation are the message the event
    names (the status message request_input wrote: a TextPart and the request's DataPart)."""
    data, at, task_id = event.data or {}, event.created_at, event.task_id
    if data.get("withdrawnRequestId"):  # asked again (services.ask_again): the old one goes
        for old in _open(task_id, Interrupt.Kind.INPUT_REQUEST):
            if old.request_id == data["withdrawnRequestId"]:
                _close(old, ops, at)
                batch.activity_change(old, {"stage": "withdrawn", "decision": None}, at)
                old.save(update_fields=["content", "pending", "resolved_at"])
    iid = f"input-{task_id}-{data['number']}"
    msg = refs.message(task_id, data.get("messageSeq"))
    parts = msg.parts if msg is not None else []
    request = next((p["data"] for p in parts if p.get("kind") == "data"), None) or {}
    interrupt = Interrupt.objects.create(
        interrupt_id=iid,
        task_id=task_id,
        kind=Interrupt.Kind.INPUT_REQUEST,
        request_id=data.get("requestId", ""),
        reason="input_required",
        content={
            "stage": "awaiting_input",
            "taskId": task_id,
            "request": request,
            "explanation": text_of(parts),
            "requestedAt": ts(at),
        },
        created_at=at,
    )
    batch.activity_snapshot(interrupt, at)
    ops.append(
        {
            "op": "add",
            "path": view.pending_path(iid),
            "value": view.pending_entry(
                iid, task_id, interrupt.request_id, "input_required", request.get("title")
            ),
        }
    )
    return iid


def _request_answered(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> None:
    """The open request this answer answers closes; its activity says the task works on
    the answer (until the task ends: `_task_ends`)."""
    data, at = event.data or {}, event.created_at
    for interrupt in _open(event.task_id, Interrupt.Kind.INPUT_REQUEST):
        if interrupt.request_id and interrupt.request_id != data.get("requestId"):
            continue
        _close(interrupt, ops, at)
        batch.activity_change(
            interrupt,
            {
                "stage": "working",
                "decision": data.get("decision", "provided"),
                "values": _summarise(data.get("values") or {}),
                "answeredBy": event.actor,
                "answeredAt": ts(at),
            },
            at,
        )
        interrupt.save(update_fields=["content", "pending", "resolved_at"])


def _pause_opens(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> None:
    """A pause (or an agent's park) opens its activity, described by the suspension the
    event names; an operator's hold over a park supersedes the park's."""
    data, at = event.data or {}, event.created_at
    if data.get("supersedes"):
        for interrupt in Interrupt.objects.filter(interrupt_id=data["supersedes"]):
            _close(interrupt, None, at)
            batch.activity_change(interrupt, {"stage": "superseded"}, at)
            interrupt.save(update_fields=["content", "pending", "resolved_at"])
    pause = pause_facts(refs.suspensions.get(data["handle"])) or {}
    interrupt = Interrupt.objects.create(
        interrupt_id=data["handle"],
        task_id=event.task_id,
        kind=Interrupt.Kind.PAUSE,
        reason="a2a:paused",
        content={"stage": "paused", "taskId": event.task_id, **pause},
        created_at=at,
    )
    batch.interrupts = True
    batch.activity_snapshot(interrupt, at)


def _pause_resumes(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> None:
    data, at = event.data or {}, event.created_at
    for interrupt in _open(event.task_id, Interrupt.Kind.PAUSE):
        _close(interrupt, None, at)
        batch.activity_change(
            interrupt,
            {
                "stage": "resumed",
                "endedAt": ts(at),
                "cause": data.get("cause"),
                "hadResumeInput": data.get("hadResumeInput"),
                "resumedBy": event.actor,
            },
            at,
        )
        interrupt.save(update_fields=["content", "pending", "resolved_at"])


def _task_ends(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> None:
    """The task is over (any of ENDING_KINDS): nothing of it stays open. Its pause ends
    (`timed_out` when its deadline ended the task, else `canceled`), a question never
    answered is withdrawn, and an answered one the task was working on ends as the task
    did (its final state, the event's: a timeout that fails the task says `failed`)."""
    if not batch.interrupts and event.from_state in (State.SUBMITTED, State.WORKING):
        return  # no question ever, and an open pause or question needs a waiting state
    kind, at = event.kind, event.created_at
    touched = _TOUCHED_BY_AN_END.fetch(task=event.task_id)  # one read for the three kinds
    pauses = [i for i in touched if i.pending and i.kind == Interrupt.Kind.PAUSE]
    asked = [i for i in touched if i.pending and i.kind == Interrupt.Kind.INPUT_REQUEST]
    answered = [i for i in touched if not i.pending]
    for interrupt in pauses:
        stage = "timed_out" if kind == EventKind.TIMED_OUT else "canceled"
        _close(interrupt, None, at)
        batch.activity_change(interrupt, {"stage": stage, "endedAt": ts(at)}, at)
        interrupt.save(update_fields=["content", "pending", "resolved_at"])
    for interrupt in asked:  # never answered
        _close(interrupt, ops, at)
        batch.activity_change(interrupt, {"stage": "withdrawn", "decision": None}, at)
        interrupt.save(update_fields=["content", "pending", "resolved_at"])
    for interrupt in answered:
        batch.activity_change(interrupt, {"stage": str(event.to_state)}, at)
        interrupt.save(update_fields=["content"])


def _untouched(event: TaskEvent, refs: Refs, batch: _Batch, ops: list) -> None:
    """The event opens, moves on or closes no interrupt."""


# What each kind of event does to the task's interrupts (its AG-UI activities and the
# view's pendingInterrupts); a handler returns a new lastInterruptId or None. Every kind
# has its entry, "nothing" included (tests/test_kinds_handled.py).
Touches = Callable[[TaskEvent, Refs, _Batch, list], str | None]
ACTIVITIES: dict[EventKind, Touches] = {
    EventKind.CREATED: _untouched,
    EventKind.STARTED: _untouched,
    EventKind.MESSAGE_ADDED: _untouched,
    EventKind.PROGRESS: _untouched,
    EventKind.ARTIFACT_ADDED: _untouched,
    EventKind.INPUT_REQUESTED: _request_opens,
    EventKind.INPUT_PROVIDED: _request_answered,
    EventKind.PAUSED: _pause_opens,
    EventKind.PARKED: _pause_opens,
    EventKind.RESUMED: _pause_resumes,
    EventKind.RETRYING: _untouched,
    EventKind.PICKED_UP: _untouched,
    EventKind.TURN_ENDED: _untouched,
    EventKind.TOOL_CALL: _untouched,
    EventKind.HOST_NOTE: _untouched,
    **dict.fromkeys(ENDING_KINDS, _task_ends),
}


def _open(task_id: str, kind: str) -> list[Interrupt]:
    return _OPEN.fetch(task=task_id, kind=str(kind))


def _close(interrupt: Interrupt, ops: list | None, at) -> None:
    interrupt.pending = False
    interrupt.resolved_at = at
    if ops is not None and interrupt.kind == Interrupt.Kind.INPUT_REQUEST:
        ops.append({"op": "remove", "path": view.pending_path(interrupt.interrupt_id)})


def poke() -> None:
    """After commit: wake every process's Tailer. Bounded like an announcement (a frozen
    Redis must not hold the writer; a2a.notify.send): a lost poke only means the Tailers
    find the rows on their next poll."""
    notify.send(VIEW_GROUP, {"type": "agui.poke"})
