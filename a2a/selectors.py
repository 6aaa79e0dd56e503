"""Reads (HackSoft's "selectors"): tasks with their history, artifacts and open suspension,
in a constant number of queries whatever the history length or page size
(docs/design/house-rules.md, D6)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import F, Prefetch, Q, Window
from django.db.models.functions import RowNumber

from a2a import access
from a2a.errors import TaskNotFound, ValidationFailed
from a2a.lifecycle import PAUSED
from a2a.models import Artifact, Message, Task, TaskCount, TaskCountChange
from a2a.prepared import Prepared, PreparedTogether, pairs_in

if TYPE_CHECKING:
    from a2a.services import Actor


@dataclass
class TaskView:
    """A task and what a reader needs of it; `history` is oldest first."""

    task: Task
    history: list[Message] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    # Whole history and artifacts of a paused task, for Bindu's checkpoint (which must not
    # shrink with the reader's historyLength); None when not asked for.
    pause_history: list[Message] | None = None
    pause_artifacts: list[Artifact] | None = None


def _recent_messages(history_length: int | None):
    """Messages of each task, the newest `history_length` only (a window function keeps
    it to one query for any number of tasks)."""
    qs = Message.objects.all()
    if history_length is not None:
        qs = qs.annotate(
            _rank=Window(RowNumber(), partition_by=[F("task_id")], order_by=F("seq").desc())
        ).filter(_rank__lte=history_length)
    return qs.order_by("task_id", "seq")


def _base(history_length: int | None, include_artifacts: bool = True, checkpoint: bool = False):
    qs = Task.objects.select_related("current_suspension", "status_message")
    if checkpoint:
        paused = [s.value for s in PAUSED]
        qs = qs.prefetch_related(
            Prefetch(
                "messages",
                queryset=Message.objects.filter(task__state__in=paused).order_by("seq"),
                to_attr="_pause_history",
            ),
            Prefetch(
                "artifacts",
                queryset=Artifact.objects.filter(task__state__in=paused).order_by("seq"),
                to_attr="_pause_artifacts",
            ),
        )
    if history_length != 0:
        qs = qs.prefetch_related(
            Prefetch("messages", queryset=_recent_messages(history_length), to_attr="_history")
        )
    if include_artifacts:
        qs = qs.prefetch_related(
            Prefetch("artifacts", queryset=Artifact.objects.order_by("seq"), to_attr="_artifacts")
        )
    return qs


def _view(task: Task) -> TaskView:
    return TaskView(
        task=task,
        history=list(getattr(task, "_history", [])),
        artifacts=list(getattr(task, "_artifacts", [])),
        pause_history=getattr(task, "_pause_history", None),
        pause_artifacts=getattr(task, "_pause_artifacts", None),
    )


def get_task(
    task_id: str,
    *,
    history_length: int | None = None,
    checkpoint: bool = False,
    visible_to: Actor | None = None,
) -> TaskView:
    """One task; `history_length=None` means the whole history. One query (five at most
    with `checkpoint`, Bindu's, read the ORM's way). A task `visible_to` may not see is
    not found."""
    if not checkpoint and isinstance(task_id, str):
        return _get_task_prepared(task_id, history_length, visible_to)
    try:
        task = access.visible(_base(history_length, checkpoint=checkpoint), visible_to).get(
            pk=task_id
        )
    except (Task.DoesNotExist, ValueError, TypeError):
        raise TaskNotFound(str(task_id)) from None
    return _view(task)


# GetTask's three reads, compiled once (a2a/prepared.py says why): the same querysets as
# _base() and _recent_messages() build, for one task.
_TASK = Prepared(
    lambda id: Task.objects.select_related("current_suspension", "status_message").filter(pk=id),
    "id",
)
_TENANT_TASK = Prepared(
    lambda id, owner: Task.objects.select_related("current_suspension", "status_message").filter(
        pk=id, owner=owner
    ),
    "id",
    "owner",
)
_TASK_ROW = Prepared(lambda id: Task.objects.filter(pk=id), "id")


def task_row(task_id: str) -> Task | None:
    """The task's row alone (no history), compiled once: read by every run's slice and
    every stream's wake-up."""
    return _TASK_ROW.first(id=task_id)


_HISTORY = Prepared(lambda task: Message.objects.filter(task_id=task).order_by("seq"), "task")


def history(task_id: str) -> list[Message]:
    """The task's whole history, oldest first, compiled once: GetTask's and every slice's."""
    return _HISTORY.fetch(task=task_id)


def _messages(task: str, owner: str | None = None, n: int | None = None):
    """A task's messages, oldest first (the newest `n` only, when given; only when the task
    is `owner`'s, when given)."""
    qs = Message.objects.filter(task_id=task)
    if owner is not None:
        qs = qs.filter(task__owner=owner)
    if n is not None:
        qs = qs.annotate(_rank=Window(RowNumber(), order_by=F("seq").desc())).filter(_rank__lte=n)
    return qs.order_by("seq")


def _task_artifacts(task: str, owner: str | None = None):
    qs = Artifact.objects.filter(task_id=task)
    if owner is not None:
        qs = qs.filter(task__owner=owner)
    return qs.order_by("seq")


_RECENT_HISTORY = Prepared(lambda task, n: _messages(task, n=n), "task", "n", ints=("n",))
_ARTIFACTS = Prepared(lambda task: _task_artifacts(task), "task")
_TENANT_HISTORY = Prepared(lambda task, owner: _messages(task, owner), "task", "owner")
_TENANT_RECENT_HISTORY = Prepared(
    lambda task, owner, n: _messages(task, owner, n), "task", "owner", "n", ints=("n",)
)
_TENANT_ARTIFACTS = Prepared(lambda task, owner: _task_artifacts(task, owner), "task", "owner")

# GetTask's reads in one statement (a2a/prepared.py, PreparedTogether): one round trip to
# the database instead of three, the heaviest part of a GetTask on PostgreSQL after the
# HTTP server. Keyed by (a tenant's reader?, history: "all" | "recent" | "none"); a tenant
# reader's history and artifacts are read only when the task is theirs, like the task.
_GET_TASK = {
    (False, "all"): PreparedTogether(_TASK, _HISTORY, _ARTIFACTS),
    (False, "recent"): PreparedTogether(_TASK, _RECENT_HISTORY, _ARTIFACTS),
    (False, "none"): PreparedTogether(_TASK, _ARTIFACTS),
    (True, "all"): PreparedTogether(_TENANT_TASK, _TENANT_HISTORY, _TENANT_ARTIFACTS),
    (True, "recent"): PreparedTogether(_TENANT_TASK, _TENANT_RECENT_HISTORY, _TENANT_ARTIFACTS),
    (True, "none"): PreparedTogether(_TENANT_TASK, _TENANT_ARTIFACTS),
}


def _seq(row: Message | Artifact) -> int:
    return row.seq


def _get_task_prepared(
    task_id: str, history_length: int | None, visible_to: Actor | None
) -> TaskView:
    restricted = visible_to is not None and visible_to.restricted
    values: dict[str, Any] = {"id": task_id, "task": task_id}
    if restricted:
        values["owner"] = visible_to.tenant
    if history_length is None:
        shape = "all"
    elif history_length != 0:
        shape, values["n"] = "recent", history_length
    else:
        shape = "none"
    found = _GET_TASK[restricted, shape].fetch(**values)
    if not found[0]:
        raise TaskNotFound(task_id)
    task = found[0][0]
    # a UNION ALL keeps no order: oldest first, as the parts' own ORDER BY says
    messages = sorted(found[1], key=_seq) if shape != "none" else []
    artifacts = sorted(found[-1], key=_seq)
    for row in (*messages, *artifacts):  # as a prefetch would: row.task needs no query
        type(row).task.field.set_cached_value(row, task)
    return TaskView(task=task, history=messages, artifacts=artifacts)


# ListTasks with a contextId or lastUpdatedAfter counts its matches exactly up to here and
# answers this many when there are more (docs/design/a2a-surface.md, D27): counting them
# all would cost what the matching rows cost, at any size.
COUNT_CAP = 10_000


def count_tasks(*, owner: str | None = None, states: Iterable[str] | None = None) -> int:
    """How many tasks `owner` has (every owner's: None) in `states` (any: None), exact and
    in one statement whatever the number of tasks: the counts the writers keep, plus the
    changes not yet folded into them (a2a/services/counts.py; D27)."""
    counts, changes = TaskCount._meta.db_table, TaskCountChange._meta.db_table
    states = list(states) if states is not None else None

    def where(owner_col: str, state_col: str) -> tuple[str, list[Any]]:
        conds: list[str] = []
        params: list[Any] = []
        if owner is not None:
            conds.append(f'"{owner_col}" = %s')
            params.append(owner)
        if states is not None:
            conds.append(f'"{state_col}" IN ({", ".join(["%s"] * len(states))})')
            params.extend(states)
        return (" WHERE " + " AND ".join(conds) if conds else ""), params

    base, p1 = where("owner", "state")
    entered, p2 = where("owner", "to_state")
    left, p3 = where("owner", "from_state")
    left = left + (" AND " if left else " WHERE ") + "\"from_state\" <> ''"
    sql = (
        f"SELECT COALESCE(SUM(n), 0) FROM (SELECT n FROM {counts}{base} "
        f"UNION ALL SELECT 1 AS n FROM {changes}{entered} "
        f"UNION ALL SELECT -1 AS n FROM {changes}{left}) AS counted"
    )
    with connection.cursor() as cur:
        cur.execute(sql, [*p1, *p2, *p3])
        return int(cur.fetchone()[0])


def count_states(*, owner: str | None = None) -> dict[str, int]:
    """How many tasks `owner` has (every owner's: None) in each state, exact and in one
    statement whatever the number of tasks, as `count_tasks` (D27): the counts the writers
    keep plus the changes not yet folded into them, grouped by state. States with none
    are left out."""
    counts, changes = TaskCount._meta.db_table, TaskCountChange._meta.db_table
    mine = ' WHERE "owner" = %s' if owner is not None else ""
    also = ' AND "owner" = %s' if owner is not None else ""
    params = [owner] * 3 if owner is not None else []
    sql = (
        "SELECT counted.state, COALESCE(SUM(counted.n), 0) FROM ("
        f'SELECT "state" AS state, n FROM {counts}{mine} '
        f'UNION ALL SELECT "to_state" AS state, 1 AS n FROM {changes}{mine} '
        f'UNION ALL SELECT "from_state" AS state, -1 AS n FROM {changes} '
        f"WHERE \"from_state\" <> ''{also}"
        ") AS counted GROUP BY counted.state"
    )
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return {state: int(n) for state, n in cur.fetchall() if n}


@dataclass
class TaskPage:
    tasks: list[TaskView]
    next_page_token: str
    page_size: int
    total_size: int


def _encode_token(task: Task) -> str:
    raw = json.dumps([task.updated_at.isoformat(), task.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[datetime, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        stamp, task_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(stamp), str(task_id)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise ValidationFailed({"pageToken": ["is not a token this server issued"]}) from None


def list_tasks(
    *,
    state: str | None = None,
    context_id: str | None = None,
    page_size: int = 50,
    page_token: str = "",
    history_length: int | None = 0,
    include_artifacts: bool = False,
    updated_after: datetime | None = None,
    checkpoint: bool = False,
    visible_to: Actor | None = None,
) -> TaskPage:
    """Tasks, most recently updated first, a page at a time (keyset pagination on
    (updated_at, id), so pages stay stable while rows are added). Four queries at most
    (six with `checkpoint`)."""
    filters = Q()
    if state:
        filters &= Q(state=state)
    if context_id:
        filters &= Q(context_id=context_id)
    if updated_after:
        filters &= Q(updated_at__gt=updated_after)
    if visible_to is not None and visible_to.restricted:  # only the caller's tenant's tasks
        filters &= Q(owner=visible_to.tenant)
    qs = _base(history_length, include_artifacts, checkpoint).filter(filters)
    if context_id or updated_after:  # filters the kept counts do not serve: capped (D27)
        total = Task.objects.filter(filters)[:COUNT_CAP].count()
    else:
        restricted = visible_to is not None and visible_to.restricted
        total = count_tasks(
            owner=visible_to.tenant if restricted else None, states=[state] if state else None
        )
    if page_token:
        stamp, last_id = _decode_token(page_token)
        # the first condition says the same as the second, but as a range an index on
        # (…, updated_at, id) seeks to: a deep page starts where it starts, instead of
        # filtering every newer row away first
        qs = qs.filter(updated_at__lte=stamp).filter(
            Q(updated_at__lt=stamp) | Q(updated_at=stamp, id__lt=last_id)
        )
    rows = list(qs.order_by("-updated_at", "-id")[: page_size + 1])
    more = len(rows) > page_size
    rows = rows[:page_size]
    return TaskPage(
        tasks=[_view(t) for t in rows],
        next_page_token=_encode_token(rows[-1]) if more else "",
        page_size=page_size,
        total_size=total,
    )


def input_answer(task_id: str, request_id: str) -> dict[str, Any] | None:
    """The validated answer to a task's input request `request_id` (its `input_provided`
    event's data: values, decision, messageSeq), or None while it is unanswered."""
    from a2a.event_kinds import EventKind
    from a2a.models import TaskEvent

    for data in (
        TaskEvent.objects.filter(task_id=task_id, kind=EventKind.INPUT_PROVIDED)
        .order_by("-id")
        .values_list("data", flat=True)
    ):
        if data.get("requestId") == request_id:
            return data
    return None


def messages_of(keys: list[tuple[str, int]]) -> list[Message]:
    """The messages of these (task id, seq) keys, in one statement whatever their count
    (a projection pass's titles and texts, a2a.prepared.pairs_in)."""
    where, params = pairs_in(("task_id", "seq"), keys, ("text", "integer"))
    table = Message._meta.db_table
    return list(Message.objects.raw(f"SELECT * FROM {table} WHERE {where}", params))
