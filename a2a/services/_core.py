"""What every service shares: who acts, locking a task, and recording a change.

A service is `with transaction.atomic(): task = lock(id); move = lifecycle.move(...);
write; record(...)`. `record` bumps the task's version, appends the TaskEvent (and its
ProjectionDue row) and publishes it (in-transaction subscribers now, on-commit ones after
the commit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from a2a import access, event_kinds, events
from a2a.errors import TaskNotFound, ValidationFailed
from a2a.event_kinds import EventKind
from a2a.models import Message, ProjectionDue, Suspension, Task, TaskEvent
from a2a.prepared import Prepared, PreparedInsert, PreparedUpdate
from a2a.services import checks, counts


@dataclass(frozen=True)
class Actor:
    """Who asked for a change: an operator, an API client, an agent, the scheduler…

    Recorded on every TaskEvent and suspension as `kind:name`. `tenant` is whose tasks it
    makes (Task.owner); a `restricted` actor sees and acts on its tenant's tasks only — an
    API key without the operator scope. Operators, agents and the scheduler are not.
    """

    kind: str
    name: str
    tenant: str = ""
    restricted: bool = False

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


SYSTEM = Actor("system", "taskdeck")
SCHEDULER = Actor("scheduler", "taskdeck")


@dataclass(frozen=True)
class IncomingMessage:
    """A message as the core sees it: parsed from its wire form by a door, checked by the
    services (`checked`) before anything is written."""

    message_id: str
    parts: list[dict[str, Any]]
    role: str = "user"
    metadata: dict[str, Any] = field(default_factory=dict)
    reference_task_ids: list[str] = field(default_factory=list)

    def checked(self) -> IncomingMessage:
        checks.identifier(self.message_id, "message.messageId")
        if self.role not in ("user", "agent"):
            raise ValidationFailed({"message.role": ['must be "user" or "agent"']})
        checks.parts(self.parts)
        checks.mapping(self.metadata, "message.metadata")
        if not isinstance(self.reference_task_ids, list):
            raise ValidationFailed({"message.referenceTaskIds": ["must be a list of task ids"]})
        for i, ref in enumerate(self.reference_task_ids):
            checks.identifier(ref, f"message.referenceTaskIds.{i}")
        return self


@dataclass(frozen=True)
class Origin:
    """Where a new task came from: the door (Task.Origin), that door's reference (an ACP
    session id, an AG-UI thread id) and a title to show (an ACP session's title)."""

    door: str
    ref: str = ""
    title: str = ""


def now() -> datetime:
    return timezone.now()


_LOCK = Prepared(lambda id: Task.objects.select_for_update().filter(pk=id), "id")


def lock(task_id: str, actor: Actor | None = None) -> Task:
    """The task, row-locked until the transaction ends (a no-op on SQLite, where the
    IMMEDIATE transaction already holds the database's write lock). A task `actor` may not
    act on is not found, exactly like one that does not exist (no existence oracle).

    No select_related here: a lock that waited re-reads the task's row at its newest
    version, but a joined row from the statement's older snapshot (PostgreSQL's READ
    COMMITTED), so a suspension the other writer just opened would read as none
    (tests/a2a/test_races.py::test_fifty_concurrent_pauses_make_one_suspension)."""
    if isinstance(task_id, str):  # the usual case, compiled once (a2a/prepared.py)
        task = _LOCK.first(id=task_id)
        if task is None:
            raise TaskNotFound(task_id)
    else:
        try:
            task = Task.objects.select_for_update().get(pk=task_id)
        except (Task.DoesNotExist, ValueError, TypeError):
            raise TaskNotFound(str(task_id)) from None
    if actor is not None and not access.may_act(actor, task.owner):
        raise TaskNotFound(str(task_id))
    return task


_SUSPENSION = Prepared(lambda pk: Suspension.objects.filter(pk=pk)[:1], "pk", ints=("pk",))


def current_suspension(task: Task) -> Suspension | None:
    """`task.current_suspension`, read compiled once when the ORM would query for it (a
    resume's, a cancel's: every end of a pause) and kept on the task as the ORM keeps it."""
    if task.current_suspension_id is None or Task.current_suspension.is_cached(task):
        return task.current_suspension
    found = _SUSPENSION.first(pk=task.current_suspension_id)
    if found is None:  # gone meanwhile (it cannot be, under the lock): as the ORM would
        return task.current_suspension
    task.current_suspension = found
    return found


_LAST_SEQ = Prepared(
    lambda task: Message.objects.filter(task_id=task).order_by("-seq").values_list("seq")[:1],
    "task",
)


# The writes every change makes (a message, the task's new version, its event), compiled
# once (a2a/prepared.py says why): they are the same statements call after call.
_NEW_MESSAGE = PreparedInsert(Message)
_NEW_EVENT = PreparedInsert(TaskEvent)
_SAVE_TASK = PreparedUpdate(Task)
_NEW_DUE = PreparedInsert(ProjectionDue)


def append_message(
    task: Task, msg: IncomingMessage, at: datetime, *, first: bool = False
) -> Message:
    """The next message of the task's history (`first`: a new task's, no need to look)."""
    last = None if first else _LAST_SEQ.first(task=task.pk)
    seq = (last[0] if last else 0) + 1
    return _NEW_MESSAGE.insert(
        task=task,
        seq=seq,
        message_id=msg.message_id,
        role=msg.role,
        parts=msg.parts,
        metadata=msg.metadata,
        reference_task_ids=msg.reference_task_ids,
        created_at=at,
    )


# Every event's data is checked against its kind's shape (a2a.event_kinds.SHAPES) when
# this names a file, and a violation is appended to it as well as raised: the test suite
# sets it (tests/settings.py) and fails any test during which a process, its own or a
# worker it started, wrote a wrong shape. Unset (production): no check, nothing imported.
_SHAPE_FAULTS = getattr(settings, "EVENT_SHAPE_FAULTS", None)


def _check_shape(kind: str, data: dict[str, Any]) -> None:
    try:
        event_kinds.check_data(kind, data)
    except event_kinds.EventShapeError as exc:
        with open(_SHAPE_FAULTS, "a", encoding="utf-8") as faults:
            faults.write(f"process {os.getpid()}: {exc}\n")
        raise


def record(
    task: Task,
    kind: EventKind,
    actor: Actor,
    at: datetime,
    *,
    from_state: str | None = None,
    reason: str = "",
    data: dict[str, Any] | None = None,
    fields: tuple[str, ...] = (),
    created: Message | None = None,
) -> TaskEvent:
    """Save `fields` of `task` with a new version and append + publish the event.

    Pass `from_state` (the state left, "" for a new task) when the state changed; every
    event records the state it leaves the task in, so from_state == to_state means the
    state did not change. `created`: the task was just inserted at its first version
    with this first message (nothing to save; subscribers get the message without a
    query, as `event.message`)."""
    if _SHAPE_FAULTS is not None:
        _check_shape(kind, data or {})
    if created is None:
        task.version += 1
        task.updated_at = at
        _SAVE_TASK.save(task, ("version", "updated_at", *fields))
    # The event's companions, one statement with it on PostgreSQL (PreparedInsert.along):
    # the count of the change of state (ListTasks' totalSize, the board's totals: D27) and
    # the due row of the projection after commit (events' docstring).
    along = []
    if from_state is not None and from_state != task.state:
        along.append(counts.changed(task, from_state))
    if events.projected():
        along.append(_NEW_DUE.along(task=task, task_version=task.version, at=at))
    event = _NEW_EVENT.insert(
        along=along,
        task=task,
        kind=kind,
        from_state=task.state if from_state is None else from_state,
        to_state=task.state,
        actor=str(actor),
        reason=reason,
        data=data or {},
        task_version=task.version,
        created_at=at,
    )
    event.task = task  # subscribers read the locked, current row without a query
    event.message = created
    events.publish(event)
    return event


def set_state(task: Task, state: str, at: datetime) -> str:
    """Move `task` to `state`; returns the state it left."""
    previous = task.state
    task.state = state
    task.status_timestamp = at
    return previous
