"""Reads of the projection: the STATE_SNAPSHOT and the pending activities, in a number of
queries that does not grow with the number of tasks.

`snapshot` is the whole live view (what the invariant compares against); transports send
`window`, the view cut to a byte budget, so no message grows with the number of tasks."""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import (
    Aggregate,
    Case,
    IntegerField,
    JSONField,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import JSONArray

from a2a import access
from a2a import selectors as task_selectors
from a2a.lifecycle import State
from a2a.models import Task
from agui import view
from agui.models import IN_VIEW, PENDING, AguiEvent, Interrupt, ViewTask

if TYPE_CHECKING:
    from a2a.services import Actor


def _narrow(
    qs, task_ids: Iterable[str] | None, visible_to: Actor | None, context_id: str | None = None
):
    if task_ids is not None:
        qs = qs.filter(task_id__in=list(task_ids))
    if context_id is not None:  # a thread's tasks: by a join, however many there are
        qs = qs.filter(task__context_id=context_id)
    return access.visible(qs, visible_to, owner_field="task__owner")


def _pending(
    ids: list[str] | None, visible_to: Actor | None, context_id: str | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Pending input requests as `/view/pendingInterrupts` entries (one query)."""
    pending = _narrow(
        Interrupt.objects.filter(PENDING, kind=Interrupt.Kind.INPUT_REQUEST),
        ids,
        visible_to,
        context_id,
    )
    for iid, task_id, request_id, reason, title in pending.values_list(
        "interrupt_id", "task_id", "request_id", "reason", "content__request__title"
    ):
        yield iid, view.pending_entry(iid, task_id, request_id, reason, title)


def snapshot(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> dict[str, Any]:
    """`{"view": {"tasks": {...}, "pendingInterrupts": {...}}}`, the whole live view (open
    tasks and the recently finished): two queries. Only the tasks `visible_to` may see (a
    restricted API key: its own tenant's). Unbounded in open tasks: what goes on a wire is
    `window`."""
    ids = list(task_ids) if task_ids is not None else None
    tasks = _narrow(ViewTask.objects.filter(IN_VIEW), ids, visible_to)
    return {
        "view": {
            "tasks": dict(tasks.values_list("task_id", "entry")),
            "pendingInterrupts": dict(_pending(ids, visible_to)),
        }
    }


def _size(value: Any) -> int:
    """Bytes of `value` as transports write it (compact, ASCII-escaped JSON)."""
    return len(json.dumps(value, separators=(",", ":")))


# What the event around the snapshot and the `truncated` note may add: the wrapper is
# about 40 bytes, the note about 80.
RESERVE_BYTES = 1024


@dataclass
class Window:
    """An opening STATE_SNAPSHOT that fits `max_bytes`: the first entries of the view in
    the order below, with their pending input requests, and their versions (what the
    socket then follows). When the view did not fit, `snapshot["truncated"]` says how many
    tasks it holds of how many (a note as of the snapshot: deltas never touch it).

    `overflow`: the tasks that need a person (view.NEEDS_PERSON) which did not fit the
    budget — never cut, they go to the client after the snapshot as STATE_DELTA `add`s
    (`overflow_deltas`), each message within the budget, so the snapshot plus those equals
    one bigger snapshot. Their versions are in `versions`."""

    snapshot: dict[str, Any]
    versions: dict[str, int] = field(default_factory=dict)
    truncated: bool = False
    overflow: list[tuple[str, dict[str, Any], list[tuple[str, dict]]]] = field(default_factory=list)
    counts: dict[str, Any] | None = None  # `counts()`, when the caller read them
    # deferred overflow (`window(defer_overflow=True)`): where the read stopped, for `more`
    # (task id, entry, version, its pending requests)
    rest: Iterator[tuple[str, Any, int, list[tuple[str, dict]]]] | None = None

    def more(self, n: int) -> list[tuple[str, dict[str, Any], list[tuple[str, dict]]]]:
        """The next `n` tasks of a deferred overflow (tasks needing a person that did not
        fit the snapshot), read on from where `window` stopped, newest first; [] once it
        reached the first task that needs no one. Their versions join `versions` as read.
        Read after the snapshot went out, so the snapshot's cost does not grow with the
        number of tasks needing a person; a task that changed meanwhile is read as it is
        now (its rows up to that version are then dropped, as for any held task) or, if
        its change moved it past the walk, reaches the socket as a joining task."""
        out: list[tuple[str, dict[str, Any], list[tuple[str, dict]]]] = []
        while self.rest is not None and len(out) < n:
            row = next(self.rest, None)
            if row is None or row[1].get("status") not in view.NEEDS_PERSON:
                self.rest = None
                break
            task_id, entry, version, mine = row
            self.versions[task_id] = version
            out.append((task_id, entry, mine))
        return out

    def overflow_deltas(
        self,
        max_bytes: int,
        items: list[tuple[str, dict[str, Any], list[tuple[str, dict]]]] | None = None,
    ) -> list[list[dict[str, Any]]]:
        """The overflow (or these `items` of it, from `more`) as JSON Patch `add` lists,
        each within `max_bytes` (serialized, RESERVE_BYTES kept for the event around it),
        one task's entry and its pending requests never split."""
        batches: list[list[dict[str, Any]]] = []
        ops: list[dict[str, Any]] = []
        used = RESERVE_BYTES
        for task_id, entry, mine in self.overflow if items is None else items:
            these = [{"op": "add", "path": view.task_path(task_id), "value": entry}]
            these += [{"op": "add", "path": view.pending_path(i), "value": p} for i, p in mine]
            cost = sum(_size(o) + 1 for o in these)
            if ops and used + cost > max_bytes:
                batches.append(ops)
                ops, used = [], RESERVE_BYTES
            ops += these
            used += cost
        if ops:
            batches.append(ops)
        return batches


def _rank_case(focus: list[str], first: str | None) -> Case:
    """The window's order as a database expression (the paths the database sorts)."""
    whens = [When(status__in=view.NEEDS_PERSON, then=Value(1))]
    if focus:
        whens.append(When(status__in=focus, then=Value(2)))
    for i, states in enumerate(view.RANKS[1:], start=3):
        whens.append(When(status__in=states, then=Value(i)))
    rank = Case(*whens, default=Value(9), output_field=IntegerField())
    if first is not None:
        rank = Case(When(task_id=first, then=Value(0)), default=rank, output_field=IntegerField())
    return rank


def ranked_groups(focus: str | None = None) -> list[list[str]]:
    """The window's groups of states, in order: those needing a person, then the states
    the board is filtered by (`focus`), then the other ranks (view.RANKS)."""
    wanted = [s for s in view.focus_states(focus) if s not in view.NEEDS_PERSON]
    groups = [view.NEEDS_PERSON]
    if wanted:
        groups.append(wanted)
    for states in view.RANKS[1:]:
        rest = [s for s in states if s not in wanted]
        if rest:
            groups.append(rest)
    return groups


def window(
    *,
    max_bytes: int,
    visible_to: Actor | None = None,
    task_ids: Iterable[str] | None = None,
    context_id: str | None = None,
    first: str | None = None,
    live_only: bool = True,
    focus: str | None = None,
    defer_overflow: bool = False,
) -> Window:
    """The view cut to `max_bytes` (serialized, with RESERVE_BYTES kept for the event).

    Order, so that a cut view keeps what an operator acts on: `first` (a run's own task),
    then the tasks that need a person (view.NEEDS_PERSON: never cut from the board's
    window, see Window.overflow; a run's thread is cut as it comes),
    then those in the states the board is filtered by (`focus`, a state or "paused"), then
    the other open ones, then agent parks, then the finished (view.RANKS); newest change
    first within each. Past the first rank the cut is a prefix of that order. Rows are
    read in pages (on the board, a page per status: `_newest_first`) with their pending
    requests (`_pending_of_row`), and reading stops at the budget, so a view of 100,000 open
    tasks, or of 3,000 waiting for input, costs what the budget holds: about eight queries
    (two more when cut), whatever the number of tasks.
    `task_ids` and `context_id` (a run's thread) narrow it; `live_only=False` reads their
    rows whether or not they are still in the live view."""
    ids = list(task_ids) if task_ids is not None else None
    rows = ViewTask.objects.filter(IN_VIEW) if live_only else ViewTask.objects.all()
    rows = _narrow(rows, ids, visible_to, context_id)
    tasks: dict[str, Any] = {}
    held_pending: dict[str, Any] = {}
    versions: dict[str, int] = {}
    overflow: list[tuple[str, dict[str, Any], list[tuple[str, dict]]]] = []
    used = RESERVE_BYTES + _size({"view": {"tasks": {}, "pendingInterrupts": {}}})
    truncated = False
    rest: Iterator[tuple[str, Any, int, list[tuple[str, dict]]]] | None = None
    board = live_only and first is None and ids is None and context_id is None
    read: Iterator[tuple[str, Any, int, list[tuple[str, dict]]]]
    if board:
        # the board's (every socket's) window: read in its order from the index, each row
        # with its pending requests
        groups = ranked_groups(focus)
        read = itertools.chain.from_iterable(_newest_first(rows, g) for g in groups)
    else:  # a thread's few tasks, or one task first: sorted by the database
        pending: dict[str, list[tuple[str, dict]]] = {}
        for iid, entry in _pending(ids, visible_to, context_id):
            pending.setdefault(entry["taskId"], []).append((iid, entry))
        read = (
            (task_id, entry, version, pending.get(task_id, []))
            for task_id, entry, version in rows.annotate(
                rank=_rank_case(view.focus_states(focus), first)
            )
            .order_by("rank", "-updated_at", "-task_id")
            .values_list("task_id", "entry", "version")
            .iterator(chunk_size=CHUNK)
        )
    for task_id, entry, version, mine in read:
        cost = _size(task_id) + _size(entry) + 2  # "id":{…} and a comma
        cost += sum(_size(iid) + _size(p) + 2 for iid, p in mine)
        if used + cost > max_bytes:
            truncated = True
            if not board or entry.get("status") not in view.NEEDS_PERSON:
                break  # (a run's thread: cut as it comes; its stream has no room for more)
            if defer_overflow:  # the rest of them: Window.more, after the snapshot
                rest = itertools.chain([(task_id, entry, version, mine)], read)
                break
            overflow.append((task_id, entry, mine))  # never cut: sent after the snapshot
            versions[task_id] = version
            continue
        used += cost
        tasks[task_id] = entry
        versions[task_id] = version
        held_pending.update(mine)
    result: dict[str, Any] = {"view": {"tasks": tasks, "pendingInterrupts": held_pending}}
    if truncated:
        board = live_only and ids is None and context_id is None
        total = _live_total(visible_to) if board else rows.count()
        shown = len(tasks) + len(overflow)
        if rest is not None:  # every task needing a person will be held: count, not read
            held = sum(1 for e in tasks.values() if e.get("status") in view.NEEDS_PERSON)
            needing = _narrow(
                ViewTask.objects.filter(IN_VIEW, status__in=view.NEEDS_PERSON), None, visible_to
            )
            shown += needing.count() - held
        result["truncated"] = {"shown": shown, "total": total, "maxBytes": max_bytes}
    return Window(result, versions, truncated, overflow, rest=rest)


_OPEN = sorted({str(s) for s in State} - set(view.FINISHED))


def _live_total(visible_to: Actor | None) -> int:
    """How many tasks the live view holds for this reader, without counting its rows (0.4 s
    over 60,000 open tasks at a million): open tasks never leave the view, so their number
    is the one the writers keep (a2a.selectors.count_tasks: two counter rows a state), plus
    the finished still in it, at most FINISHED_MAX, counted on `viewtask_live`. Exact once
    the projection has caught up with the tasks."""
    restricted = visible_to is not None and visible_to.restricted
    open_tasks = task_selectors.count_tasks(
        owner=visible_to.tenant if restricted else None, states=_OPEN
    )
    finished = _narrow(ViewTask.objects.filter(IN_VIEW, status__in=view.FINISHED), None, visible_to)
    return open_tasks + finished.count()


REQUESTS_COUNT_CAP = 10_000  # the inbox's cap: "10,000+ waiting" beyond


def counts(visible_to: Actor | None = None) -> dict[str, Any]:
    """What the board's counts, the Inbox badge and the tab title show, over every task
    the reader may see, not over the tasks its window holds (issue 29): `states` (tasks per
    state, from the counts the writers keep: a2a.selectors.count_states, one statement
    whatever the number of tasks), `total`, and `requests` (pending input requests, as
    the inbox counts them: an index-only count on `interrupt_kind_pending` that stops at
    REQUESTS_COUNT_CAP; `requestsMore` past it). Exact as of the read: the counts commit
    with the writes they count (D27), so they may be a moment ahead of the projected view,
    never behind what was committed before the read."""
    restricted = visible_to is not None and visible_to.restricted
    states = task_selectors.count_states(owner=visible_to.tenant if restricted else None)
    waiting = _narrow(
        Interrupt.objects.filter(PENDING, kind=Interrupt.Kind.INPUT_REQUEST), None, visible_to
    )
    requests = waiting.order_by().values("created_at")[:REQUESTS_COUNT_CAP].count()
    return {
        "states": {str(s): states.get(str(s), 0) for s in State},
        "total": sum(states.values()),
        "requests": requests,
        "requestsMore": requests >= REQUESTS_COUNT_CAP,
    }


CHUNK = 200
# A status's first page: the merge below reads one page of every status before it yields
# anything, and a page of CHUNK big entries each was most of the rows the board's opening
# decoded and never used (720 read for 217 held at a million tasks).
FIRST_CHUNK = 100


class _JSONAgg(Aggregate):
    """The JSON array of a group's values: SQLite's json_group_array, PostgreSQL's
    jsonb_agg."""

    function = "JSON_GROUP_ARRAY"
    output_field = JSONField()

    def as_postgresql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="JSONB_AGG", **extra)


def _pending_of_row() -> Subquery:
    """A view row's pending input requests, as a JSON array of [interrupt id, request id,
    reason, title] (NULL: none), read with the row: the board's window reads what its
    budget holds, and so the requests of those rows only. (It read every pending request
    first: 3,087 at a million tasks, 7 ms of the board's opening, for 217 tasks held.)"""
    requests = (
        Interrupt.objects.filter(PENDING, kind=Interrupt.Kind.INPUT_REQUEST)
        .filter(task_id=OuterRef("task_id"))
        .order_by()
        .values("task_id")
        .annotate(
            found=_JSONAgg(
                JSONArray("interrupt_id", "request_id", "reason", KT("content__request__title"))
            )
        )
        .values("found")
    )
    return Subquery(requests, output_field=JSONField())


def _newest_first(
    rows, statuses: list[str]
) -> Iterator[tuple[str, Any, int, list[tuple[str, dict]]]]:
    """(task_id, entry, version, pending requests) of `rows` in these statuses, newest
    change first, read as far as the caller reads: one ordered walk of `viewtask_live`
    (in_view, status, updated_at) per status, a page at a time (FIRST_CHUNK rows, then
    CHUNK), merged. Why not one query ordered by status rank: no index gives that order,
    so the database sorted every live row with its entry before the first came out —
    0.9 s for the board's opening snapshot with 55,000 open tasks (docs/production.md,
    "Scale"); this reads what the budget holds."""

    def one(status: str) -> Iterator[tuple]:
        qs = (
            rows.filter(status=status)
            .annotate(pending=_pending_of_row())
            .order_by("-updated_at", "-task_id")
        )
        after, size = None, FIRST_CHUNK
        while True:
            page = qs
            if after is not None:  # keyset: the range first, so the index seeks to it
                page = qs.filter(updated_at__lte=after[0]).filter(
                    Q(updated_at__lt=after[0]) | Q(updated_at=after[0], task_id__lt=after[1])
                )
            chunk = list(
                page.values_list("updated_at", "task_id", "entry", "version", "pending")[:size]
            )
            yield from chunk
            if len(chunk) < size:
                return
            after, size = chunk[-1][:2], CHUNK

    merged = heapq.merge(*(one(s) for s in statuses), key=lambda r: (r[0], r[1]), reverse=True)
    for _, task_id, entry, version, pending in merged:
        mine = [
            (iid, view.pending_entry(iid, task_id, request_id, reason, title))
            for iid, request_id, reason, title in pending or ()
        ]
        yield task_id, entry, version, mine


def entries_now(
    task_ids: Iterable[str], visible_to: Actor | None = None
) -> dict[str, tuple[dict[str, Any], int, list[tuple[str, dict]]]]:
    """Each of these tasks still in the live view, as a socket would hold it now: its
    entry, its view version and its pending input requests (two queries)."""
    ids = list(task_ids)
    rows = _narrow(ViewTask.objects.filter(IN_VIEW), ids, visible_to)
    pending: dict[str, list[tuple[str, dict]]] = {}
    for iid, entry in _pending(ids, visible_to):
        pending.setdefault(entry["taskId"], []).append((iid, entry))
    return {
        task_id: (entry, version, pending.get(task_id, []))
        for task_id, entry, version in rows.values_list("task_id", "entry", "version")
    }


def pending_activities(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> list[Interrupt]:
    """Pending input requests and pauses (each its own ACTIVITY_SNAPSHOT: one task's
    size). With `task_ids`, those of these tasks (a socket's window) only: read in slices
    of IN_SLICE ids (old SQLite builds allow 999 parameters), never the whole view's."""
    qs = _narrow(Interrupt.objects.filter(pending=True), None, visible_to)
    if task_ids is None:
        return list(qs.order_by("created_at", "interrupt_id"))
    ids = list(task_ids)
    found = [
        interrupt
        for start in range(0, len(ids), IN_SLICE)
        for interrupt in qs.filter(task_id__in=ids[start : start + IN_SLICE])
    ]
    return sorted(found, key=lambda i: (i.created_at, i.interrupt_id))


IN_SLICE = 900


def versions(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> dict[str, int]:
    qs = _narrow(ViewTask.objects.all(), task_ids, visible_to)
    return dict(qs.values_list("task_id", "version"))


def visible_ids(task_ids: Iterable[str], visible_to: Actor) -> set[str]:
    """Which of `task_ids` `visible_to` may see (one query)."""
    return set(
        access.visible(Task.objects.filter(pk__in=list(task_ids)), visible_to).values_list(
            "pk", flat=True
        )
    )


def cursor() -> int:
    return AguiEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def projected_version(task_id: str) -> int:
    """The task version the task's view entry reflects (0: not projected yet). The view is
    projected after the writer's commit (agui.projection), so it may be behind the task;
    rows from before that have no `task_version` and reflect their view version."""
    seen = ViewTask.objects.filter(task_id=task_id).values_list("task_version", "version").first()
    if seen is None:
        return 0
    return seen[0] if seen[0] is not None else seen[1]
