"""The AG-UI projection, after the A2A writer's commit.

Decided in docs/design/projection-after-commit.md, D8.

The writer commits its change with its TaskEvent and one ProjectionDue row per event (a
plain insert that never waits). A *pass* (`project`) then takes a set of tasks and, for each
task it holds, projects the task's committed events past the view's own cursor
(ViewTask.task_version / event_id) as one change of the view (agui.projector.project_task),
deletes exactly the due rows of the versions it projected, and commits: the view rows, the
Interrupts, the AG-UI rows and the deletion commit together, so a pass that dies projects
nothing and leaves its due rows for the next one. Why nothing is skipped or doubled:

- The task's row is read before its events, and the events read are `version <= V` (the
  version read): within one task, versions commit in order (bumped under the task's row
  lock), so the events read are complete and contiguous; one committed after the read is
  V+1, and its due row survives the deletion (`task_version <= V`).
- One pass at a time holds a task: on PostgreSQL a transaction-scoped advisory try-lock
  per task (never waited for by another pass: a held task is skipped; the holder looks
  again after its commit for what committed meanwhile); on SQLite the pass is a write
  transaction like any other, one at a time across processes.

Where passes run (TASKDECK_PROJECTION, conf.VIEW.projection):
- `thread` (the default): an on-commit subscriber (`wake`) hands the task's id to this
  process's projector thread (`Projector`) — no database work on the writer's path. Events
  of one task committed while a pass runs are projected together by the next one: the
  busier the process, the more a pass coalesces. On SQLite its pass also takes every
  other task due, whichever process committed it (`take_all`: a pass is the one writer
  there, so another process's change need not wait for that process's turn at the lock).
  When the thread is behind (a change has waited BEHIND_SECONDS for it), a writer waits
  after its commit for the pass of its change (BEHIND_WAIT_SECONDS at most): the load
  slows to what the projection keeps up with (`wake`).
- `sync`: the same subscriber projects on the committing thread, right after the commit
  (the writer's call returns with its view change committed; the test suite runs this).
- Either way the scheduler's tick runs `sweep`: due rows older than SWEEP_AFTER_SECONDS
  (their process died between the commit and the pass, or its pass failed) are projected
  there. A projector thread sweeps everything once when it starts.
- `catch_up(task_ids)`: project these tasks now on this thread, waiting for a pass in
  flight: what an operator's own action needs before the page shows its result.

The lag (age of the oldest due row) is `lag()` (a2a.health reads it): /healthz, the live
view's lag notice (agui/fanout.py) and the benches show it.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from collections.abc import Iterable
from datetime import timedelta

from django.db import close_old_connections, connection, transaction
from django.db.models import Min, OuterRef, Subquery
from django.utils import timezone

from a2a import conf, os_threads
from a2a import selectors as a2a_selectors
from a2a.event_kinds import EventKind, is_agent_text
from a2a.health import Lag, projection_lag
from a2a.models import Message, ProjectionDue, Suspension, Task, TaskEvent
from a2a.prepared import Prepared, one_of
from agui import projector, search, view
from agui.models import AguiRun, ViewTask

log = logging.getLogger(__name__)

BATCH = 64  # tasks per pass: on SQLite writers wait behind one pass at most this big
SWEEP_AFTER_SECONDS = 2.0  # a due row this old was left by a process that died (or failed)
SWEEP_TASKS = 200  # tasks per sweep: a backlog drains in steps
AGAIN_ROUNDS = 3  # a pass looks again this often for what committed while it held tasks
CATCH_UP_SECONDS = 1.0  # the most an operator's request waits for a pass in flight
BEHIND_SECONDS = 0.2  # a change that waited this long for the projector thread: it is behind
# (0.05 s bounded the lag as well but cost PostgreSQL 6-10 % of its sends under bench/load.py)
BEHIND_WAIT_SECONDS = 0.5  # the most a writer then waits for the thread's pass of its change
EXIT_SECONDS = 2.0  # a process that exits projects what it has not yet, this long at most
FRESH_SECONDS = 1.0  # a connection used this recently is taken as alive, without a ping
# A task whose pass failed (an event it cannot project, a database error) rests this long
# before the sweep tries it again, twice as long after each failure, up to RETRY_MAX_SECONDS:
# the sweep runs at every scheduler tick, and must neither log a failure four times a second
# nor let one task's failure hold up the others'.
RETRY_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL: lock_timeout passed (catch_up waited its bound)
# The advisory lock class of a task being projected (PostgreSQL); Taskdeck takes no
# other advisory lock. The second key is hashtext(task id): a collision only makes two
# tasks share a lock, which is harmless.
LOCK_CLASS = 0x7A5D

# Tests set this to a callable run inside every pass just before it commits (the fault
# tests hold a pass open there).
before_commit = None


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _claim(task_ids: list[str], wait: bool) -> list[str]:
    """The tasks of `task_ids` this transaction now holds: all of them on SQLite (the pass
    is the one writer), on PostgreSQL those whose try-lock it got (`wait`: all, in order)."""
    if not _postgres():
        return task_ids
    with connection.cursor() as cursor:
        if wait:
            # set_config(…, true) is SET LOCAL with a bound value (SET takes no parameter,
            # and the connection binds server-side: dashboard/settings.py)
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)",
                [f"{int(CATCH_UP_SECONDS * 1000)}ms"],
            )
            for task_id in task_ids:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LOCK_CLASS, task_id]
                )
            return task_ids
        # only tasks still due: `project` read that beforehand on SQLite; here it is the
        # same statement as the claim (one round trip less between a commit and its view)
        cursor.execute(
            "SELECT t FROM unnest(%s::text[]) AS t "
            f"WHERE EXISTS (SELECT 1 FROM {ProjectionDue._meta.db_table} AS d "
            "WHERE d.task_id = t) AND pg_try_advisory_xact_lock(%s, hashtext(t))",
            [task_ids, LOCK_CLASS],
        )
        held = {row[0] for row in cursor.fetchall()}
    return [t for t in task_ids if t in held]


# The reads of a pass over one task — the usual pass: a writer's own wake, an idle
# projector — compiled once (a2a/prepared.py says why: building and compiling these
# querysets cost more CPU than running them). Passes over several tasks use the ORM.
_DUE = Prepared(
    lambda task: ProjectionDue.objects.filter(task_id=task).values_list("task_id")[:1], "task"
)
# The task with its status message, its suspension, its view row and its newest AG-UI run
# (the entry's lastRunId): one statement, one snapshot, one round trip (three before). A run's
# row commits with the writes it made (agui.bridge), so the newest run read with the task is
# the one that wrote its events up to the version read.
_TASK = Prepared(
    lambda id: (
        Task.objects.select_related("status_message", "current_suspension", "viewtask")
        .annotate(
            newest_run=Subquery(
                AguiRun.objects.filter(task_id=OuterRef("pk"))
                .order_by("-started_at", "-run_id")
                .values("run_id")[:1]
            )
        )
        .filter(pk=id)[:1]
    ),
    "id",
)
_EVENTS_AFTER_ID = Prepared(
    lambda task, after, upto: TaskEvent.objects.filter(
        task_id=task, id__gt=after, task_version__lte=upto
    ).order_by("id"),
    "task",
    "after",
    "upto",
    ints=("after", "upto"),
)
_EVENTS_AFTER_VERSION = Prepared(
    lambda task, after, upto: TaskEvent.objects.filter(
        task_id=task, task_version__gt=after, task_version__lte=upto
    ).order_by("id"),
    "task",
    "after",
    "upto",
    ints=("after", "upto"),
)
_MESSAGE = Prepared(
    lambda task, seq: Message.objects.filter(task_id=task, seq=seq)[:1],
    "task",
    "seq",
    ints=("seq",),
)
_SUSPENSION = Prepared(lambda handle: Suspension.objects.filter(handle=handle)[:1], "handle")
_ALL_VERSIONS = 2**62  # above any task's version (`_consumed`)
_CONSUME = f"DELETE FROM {ProjectionDue._meta.db_table} WHERE task_id = %s AND task_version <= %s"


def _cursor(current: ViewTask | None) -> tuple[int, int | None]:
    """(p, c): the task version the view reflects and the id of the last event projected.
    Rows from before the projection ran after commit have neither: their view version was
    the task's (one more once evicted, when nothing can follow)."""
    if current is None:
        return 0, None
    if current.task_version is not None:
        return current.task_version, current.event_id
    return (current.version if current.in_view else current.version - 1), None


def _unprojected(task: Task, current: ViewTask | None) -> list[TaskEvent]:
    """The task's committed events the view has not taken, up to the version read."""
    done, last_id = _cursor(current)
    if last_id is not None:  # by the (task, id) index: within a task, id order is version order
        found = _EVENTS_AFTER_ID.fetch(task=task.pk, after=last_id, upto=task.version)
    else:
        found = _EVENTS_AFTER_VERSION.fetch(task=task.pk, after=done, upto=task.version)
    _check_contiguous(task, found)
    return found


# The same for several tasks in one statement (PostgreSQL: a round trip per task was a
# fifth of a 64-task pass's CPU). Within a task ids grow with versions, so the events past
# the cursor's event id are exactly those past its version: both bounds, whichever is known.
_EVENTS_OF_MANY = (
    "SELECT e.* FROM {events} AS e JOIN unnest(%s::text[], %s::bigint[], %s::bigint[], "
    "%s::bigint[]) AS c(task, after_id, after_version, upto) ON e.task_id = c.task "
    "AND e.id > c.after_id AND e.task_version > c.after_version AND e.task_version <= c.upto "
    "ORDER BY e.task_id, e.id"
)


def _unprojected_of(tasks: list[Task], views: dict[str, ViewTask]) -> dict[str, list[TaskEvent]]:
    """`_unprojected` of each task, by task id: one statement on PostgreSQL, a read per
    task elsewhere (SQLite reads in process: no round trip to save)."""
    if len(tasks) == 1 or not _postgres():
        return {task.pk: _unprojected(task, views.get(task.pk)) for task in tasks}
    cursors = [_cursor(views.get(task.pk)) for task in tasks]
    params = [
        [task.pk for task in tasks],
        [last_id or 0 for _, last_id in cursors],
        [done for done, _ in cursors],
        [task.version for task in tasks],
    ]
    sql = _EVENTS_OF_MANY.format(events=TaskEvent._meta.db_table)
    found: dict[str, list[TaskEvent]] = {task.pk: [] for task in tasks}
    for event in TaskEvent.objects.raw(sql, params):
        found[event.task_id].append(event)
    for task in tasks:
        _check_contiguous(task, found[task.pk])
    return found


def _check_contiguous(task: Task, found: list[TaskEvent]) -> None:
    versions = [e.task_version for e in found]
    if versions and versions != list(range(versions[0], versions[0] + len(versions))):
        log.error("task %s: events out of order for the projection: %s", task.pk, versions)


def _refs(plans: list[tuple[Task, ViewTask | None, list[TaskEvent]]]) -> projector.Refs:
    """The messages and suspensions the pass's events name: one query each."""
    wanted: dict[str, set[int]] = {}
    handles: set[str] = set()
    for task, current, events in plans:
        seqs = wanted.setdefault(task.pk, set())
        if current is None:
            seqs.add(1)  # the title: the first message
        for e in events:
            data = e.data or {}
            texts = e.kind == EventKind.INPUT_REQUESTED or is_agent_text(e.kind, data)
            if texts and type(data.get("messageSeq")) is int:
                seqs.add(data["messageSeq"])
            if e.kind in (EventKind.PAUSED, EventKind.PARKED):
                handles.add(data["handle"])
    refs = projector.Refs()
    # a pause's suspension is usually the task's current one, read with the task
    for task, _, _ in plans:
        current = task.current_suspension
        if current is not None and current.handle in handles:
            refs.suspensions[current.handle] = current
    handles -= set(refs.suspensions)
    asked = [(task_id, seq) for task_id, seqs in wanted.items() for seq in sorted(seqs)]
    if len(asked) == 1:
        msg = _MESSAGE.first(task=asked[0][0], seq=asked[0][1])
        found = [msg] if msg is not None else []
    elif asked:
        found = a2a_selectors.messages_of(asked)
    else:
        found = []
    for msg in found:
        refs.messages[(msg.task_id, msg.seq)] = msg
    if len(handles) == 1:
        susp = _SUSPENSION.first(handle=next(iter(handles)))
        if susp is not None:
            refs.suspensions[susp.handle] = susp
    elif handles:
        for susp in Suspension.objects.filter(handle__in=handles):
            refs.suspensions[susp.handle] = susp
    return refs


def _runs(tasks: list[Task]) -> dict[str, str]:
    """Each task's newest AG-UI run: the entry's lastRunId (a run's row commits with the
    writes it made, agui.bridge). A task read alone (`_TASK`) came with it."""
    if len(tasks) == 1 and hasattr(tasks[0], "newest_run"):
        run = tasks[0].newest_run
        return {tasks[0].pk: run} if run is not None else {}
    task_ids = [task.pk for task in tasks]
    newest: dict[str, str] = {}
    rows = AguiRun.objects.filter(task_id__in=task_ids).order_by("started_at", "run_id")
    for task_id, run_id in rows.values_list("task_id", "run_id"):
        newest[task_id] = run_id
    return newest


def _others_due(held: list[str]) -> list[str]:
    """SQLite, inside a pass: `held` and the other tasks due now (up to BATCH in all), but
    those resting after a failure here. A pass is the one writer then: whatever committed
    before it took the lock is its to project, whichever process committed it (see
    `project`'s `take_all`)."""
    room = BATCH - len(held)
    if room <= 0:
        return held
    resting = _failing.resting(suspects=True)
    found = (
        ProjectionDue.objects.exclude(task_id__in=held)
        .values_list("task_id", flat=True)
        .distinct()
        .order_by("task_id")[: room + len(resting)]
    )
    others = [t for t in found if t not in resting][:room]
    return sorted([*held, *others]) if others else held


def _pass(task_ids: list[str], wait: bool, take_all: bool = False) -> list[str]:
    """One transaction: project every task of `task_ids` this pass can hold; returns them
    (`take_all`, SQLite: and every other task due, `_others_due`)."""
    with transaction.atomic():
        held = _claim(task_ids, wait)
        if take_all:
            held = _others_due(held)
        if not held:
            return held
        tasks, views = _tasks_and_views(held)  # the tasks before their events (module doc)
        plans, through = [], {}
        unprojected = _unprojected_of([tasks[t] for t in held if t in tasks], views)
        for task_id in held:
            task = tasks.get(task_id)
            if task is None:  # gone (deleted): its due rows go too
                through[task_id] = None
                continue
            events = unprojected[task_id]
            through[task_id] = task.version
            if events:
                plans.append((task, views.get(task_id), events))
        rows: list = []
        # a pass over several tasks inserts their new view rows together
        new_views: list[ViewTask] | None = [] if len(plans) > 1 else None
        if plans:
            refs, runs = _refs(plans), _runs([p[0] for p in plans])
            # the search documents (agui/search.py): the same pass, the same transaction
            search.index(plans, refs.message)
            for task, current, events in plans:
                rows += projector.project_task(
                    task, current, events, refs, runs.get(task.pk), new_views
                )
            if new_views:  # before the push-out below reads which finished ones are in view
                projector.insert_views(new_views)
            if any(task.state in view.FINISHED for task, _, _ in plans):
                last = max(events[-1].created_at for _, _, events in plans)
                rows += projector.finished_pushed_out(last)
        projector.insert_rows(rows)
        _consumed(through)
        if before_commit is not None:
            before_commit(held)
        if rows:
            transaction.on_commit(projector.poke)
    return held


def _tasks_and_views(held: list[str]) -> tuple[dict[str, Task], dict[str, ViewTask]]:
    """The tasks (with their status message and suspension) and their view rows."""
    if len(held) == 1:
        task = _TASK.first(id=held[0])
        if task is None:
            return {}, {}
        try:
            current = task.viewtask  # read with the task (None cached when it has none)
        except ViewTask.DoesNotExist:
            return {task.pk: task}, {}
        return {task.pk: task}, {task.pk: current}
    related = ("status_message", "current_suspension")
    tasks = {t.pk: t for t in Task.objects.filter(pk__in=held).select_related(*related)}
    return tasks, {v.task_id: v for v in ViewTask.objects.filter(task_id__in=held)}


def _consumed(through: dict[str, int | None]) -> None:
    """Delete the due rows the pass projected: per task, versions up to the one read."""
    if len(through) == 1:
        ((task_id, version),) = through.items()
        if version is not None:
            with connection.cursor() as cursor:
                cursor.execute(_CONSUME, [task_id, version])
            return
    if not through:
        return
    # One statement written once per vendor, not an OR of a Q per task built by the ORM
    # (a pass of 64 tasks spent more CPU building it than the database deleting).
    # A task gone (deleted) loses all its rows: no version is above _ALL_VERSIONS.
    ids = list(through)
    upto = [_ALL_VERSIONS if v is None else v for v in through.values()]
    table = ProjectionDue._meta.db_table
    with connection.cursor() as cursor:
        if _postgres():
            cursor.execute(
                f"DELETE FROM {table} AS d USING unnest(%s::text[], %s::bigint[]) AS t(id, upto) "
                "WHERE d.task_id = t.id AND d.task_version <= t.upto",
                [ids, upto],
            )
        else:
            where, params = one_of("task_id", ids)
            cursor.execute(
                f"DELETE FROM {table} WHERE {where} AND task_version <= (SELECT "
                f"json_extract(value, '$[1]') FROM json_each(%s) "
                f"WHERE json_extract(value, '$[0]') = {table}.task_id)",
                [*params, json.dumps([list(p) for p in zip(ids, upto, strict=True)])],
            )


def _still_due(task_ids: list[str]) -> list[str]:
    """Of these tasks, those with due rows now (committed while a pass held them)."""
    if len(task_ids) == 1:
        return task_ids if _DUE.first(task=task_ids[0]) is not None else []
    found = ProjectionDue.objects.filter(task_id__in=task_ids).values_list("task_id", flat=True)
    return sorted(set(found))


def project(task_ids: Iterable[str], *, wait: bool = False, take_all: bool = False) -> set[str]:
    """Project the committed, unprojected events of these tasks, BATCH at a time; returns
    the tasks it projected. A task another pass holds is skipped (`wait`: waited for); on
    PostgreSQL, once its passes committed, it looks again for what committed meanwhile
    (a writer whose own wake found the task held), AGAIN_ROUNDS times at most (the sweep
    takes what is left). A pass that fails is not raised: its tasks are projected one by
    one, and a task that fails alone is logged once and left due (`_isolated`)."""
    # Only tasks with due rows, read outside any write transaction: a task projected since
    # it was handed over (three events of one transaction wake three times; another
    # process's pass took it) costs this read, not a pass (on SQLite: not the write lock).
    # On PostgreSQL a pass that does not wait reads it in its claim instead (`_claim`).
    ids = sorted(set(task_ids))
    take_all = take_all and not _postgres()  # PostgreSQL's passes claim their own tasks
    todo = ids if _postgres() and not wait else _still_due(ids)
    done: set[str] = set()
    for _ in range(AGAIN_ROUNDS if _postgres() else 1):
        held: list[str] = []
        for i in range(0, len(todo), BATCH):
            held += _isolated(todo[i : i + BATCH], wait, take_all)
        done.update(held)
        if not held or not _postgres():
            break
        todo = _still_due(held)
        if not todo:
            break
    return done


def _isolated(batch: list[str], wait: bool, take_all: bool = False) -> list[str]:
    """`_pass(batch)`, and when it fails, a pass per task: one task's failure (an event it
    cannot project, a row the database refuses) must not keep the batch's other tasks out
    of the view. A task that fails alone keeps its due rows (its pass rolled back), is
    logged once, and rests (`_Failing`) before the sweep tries it again. (`take_all`: the
    other processes' tasks the failed pass took are left to their own passes, which log
    their failure once; here they are suspects, which no pass of this process takes
    uninvited for a while: a task that cannot be projected must not fail every pass.)"""
    try:
        held = _pass(batch, wait, take_all)
    except Exception as exc:
        _usable_again()
        if take_all:
            taken = set(_others_due(batch)) - set(batch)
            if taken:  # maybe theirs: ours again, alone
                _failing.suspect(taken)
                return _isolated(batch, wait)
        if len(batch) == 1:
            _failing.failed(batch[0], exc)
            return []
        held, failed = [], False
        for task_id in batch:
            try:
                held += _pass([task_id], wait)
            except Exception as one:
                _usable_again()
                _failing.failed(task_id, one)
                failed = True
        if not failed:  # nothing to blame on a task (a dropped connection): say it once
            log.warning(
                "a projection pass over %d tasks failed (%r); each was projected alone",
                len(batch),
                exc,
            )
    _failing.projected(held)
    return held


def _usable_again() -> None:
    """After a failed pass: a connection the failure left unusable (dropped by the server)
    is closed, so the next pass opens a new one. Not inside a transaction of the caller's
    (a test's, or a writer's in `sync` mode): the pass was a savepoint of it there."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def _busy(exc: BaseException) -> bool:
    """A lock_timeout: `catch_up` waited its bound for a pass that holds the task."""
    return getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE


class _Failing:
    """The tasks whose last pass in this process failed: when the sweep may try each again.
    Process-local: another process's sweep finds the task failing by itself, and logs it
    once too."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: dict[str, tuple[float, float]] = {}  # task -> (retry at, rest)
        self.suspects: dict[str, float] = {}  # task -> not taken uninvited until then

    def failed(self, task_id: str, exc: BaseException) -> None:
        if _busy(exc):  # not this task's fault: its holder projects it
            log.warning(
                "task %s is held by another projection pass; that pass projects it", task_id
            )
            return
        with self.lock:
            rest = min(self.tasks.get(task_id, (0.0, RETRY_SECONDS / 2))[1] * 2, RETRY_MAX_SECONDS)
            self.tasks[task_id] = (time.monotonic() + rest, rest)
        log.error(
            "projecting task %s failed; its changes stay due, the sweep retries in %.0f s",
            task_id,
            rest,
            exc_info=exc,
        )

    def suspect(self, task_ids: set[str]) -> None:
        """These tasks were in a pass that failed, taken besides its own (`_others_due`):
        maybe one of them failed it. Not logged (their own process's pass tells), only left
        out of the passes that take others' tasks for RETRY_SECONDS."""
        until = time.monotonic() + RETRY_SECONDS
        with self.lock:
            self.suspects.update(dict.fromkeys(task_ids, until))

    def projected(self, task_ids: list[str]) -> None:
        if self.tasks or self.suspects:
            with self.lock:
                for task_id in task_ids:
                    self.tasks.pop(task_id, None)
                    self.suspects.pop(task_id, None)

    def resting(self, suspects: bool = False) -> set[str]:
        """The tasks the sweep leaves alone now (`suspects`: and those a pass does not
        take uninvited)."""
        now = time.monotonic()
        with self.lock:
            found = {t for t, (at, _) in self.tasks.items() if at > now}
            if suspects:
                self.suspects = {t: at for t, at in self.suspects.items() if at > now}
                found |= set(self.suspects)
            return found


_failing = _Failing()


def due_tasks(older_than: float = 0.0, limit: int = SWEEP_TASKS) -> list[str]:
    """The tasks with due rows older than `older_than` seconds, oldest first."""
    rows = ProjectionDue.objects.all()
    if older_than > 0:
        rows = rows.filter(at__lt=timezone.now() - timedelta(seconds=older_than))
    rows = rows.values("task_id").annotate(first=Min("at")).order_by("first", "task_id")
    return [r["task_id"] for r in rows[:limit]]


def sweep(older_than: float = SWEEP_AFTER_SECONDS) -> int:
    """The scheduler's periodic job (registered in AguiConfig.ready()): project the tasks
    whose due rows are older than `older_than` — a process died between its commit and its
    pass, or its pass failed. A task whose pass failed in this process rests first
    (RETRY_SECONDS, doubling). Returns how many tasks it projected."""
    resting = _failing.resting()
    ids = [t for t in due_tasks(older_than, SWEEP_TASKS + len(resting)) if t not in resting]
    return len(project(ids[:SWEEP_TASKS]))


def project_due() -> int:
    """Project every due row now (tests; a projector thread's start): how many tasks."""
    total, failed = 0, set()
    while ids := [t for t in due_tasks(limit=SWEEP_TASKS + len(failed)) if t not in failed]:
        done = project(ids, wait=True)
        total += len(done)
        if not done:
            break
        failed |= set(ids) - done  # logged once; not again in this call
    return total


def catch_up(task_ids: Iterable[str]) -> None:
    """An operator's own action shows on the next page: project these tasks now, waiting
    (CATCH_UP_SECONDS at most) for a pass that holds one. A no-op in `sync` mode (the
    writer already projected). A failure is logged, never raised: the action succeeded."""
    ids = [t for t in task_ids if t]
    if not ids or conf.VIEW.projection == "sync":
        return
    try:
        project(ids, wait=True)
    except Exception:
        log.exception("catching up the view for %s failed; the projector will", ids)


def lag() -> Lag:
    """How far the live view is behind: the core's one reading of it (a2a.health), which
    /healthz serves and the socket's lag notice (agui/fanout.py) and the benches read."""
    return projection_lag()


class Projector:
    """The process's projector thread: woken with the ids of tasks that changed, it
    projects them, as many as came in since its last pass, in one go."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.lock = threading.Lock()
        self.woken = threading.Event()
        self.thread: threading.Thread | None = None
        self.passes = 0
        self.waiting_since = 0.0  # time.monotonic() when `pending` last became non-empty
        self.taken = 0  # how many times the thread took what was pending
        self.finished = 0  # the number of the last take whose pass ended
        self.ended = threading.Condition(self.lock)  # notified when a pass ends
        # held by the thread through each of its passes: the exit drain waits for a pass
        # in flight (its tasks would otherwise stay due when the process ends mid-pass)
        self.passing = threading.Lock()

    def add(self, task_id: str) -> None:
        """Hand the task over; when the thread is behind (a task handed over earlier has
        waited BEHIND_SECONDS for it to take it: its pass in flight is that long), wait
        until the pass that takes this one has ended, BEHIND_WAIT_SECONDS at most."""
        with self.lock:
            now = time.monotonic()
            behind = bool(self.pending) and now - self.waiting_since > BEHIND_SECONDS
            if not self.pending:
                self.waiting_since = now
            self.pending.add(task_id)
            self._start()
            ours = self.taken + 1
        self.woken.set()
        if behind and threading.current_thread() is not self.thread:
            with self.ended:
                self.ended.wait_for(lambda: self.finished >= ours, BEHIND_WAIT_SECONDS)

    def start(self) -> None:
        """Start the thread now rather than on the first change: it runs at the priority of
        the thread that starts it (dashboard/call_threads.py)."""
        with self.lock:
            self._start()

    def _start(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="taskdeck-projector", daemon=True)
            self.thread.start()

    def take(self) -> list[str]:
        with self.lock:
            ids, self.pending = self.pending, set()
            self.taken += 1
        return sorted(ids)

    def _ended(self) -> None:
        """The pass of the last take ended (projected, or failed and left to the sweep)."""
        with self.ended:
            self.finished = self.taken
            self.ended.notify_all()

    def _run(self) -> None:
        os_threads.name()
        with self.passing:
            try:
                project_due()  # what a previous life of this process (or another) left
            except Exception:
                log.exception("the projector's first sweep failed; the scheduler's will retry")
                connection.close()
        passed_at = float("-inf")
        while True:
            self.woken.wait()
            self.woken.clear()
            with self.passing:
                ids = self.take()
                if not ids:
                    continue
                # A connection that served a pass a moment ago is taken as alive: no
                # health-check ping (CONN_HEALTH_CHECKS) before this pass, one round trip
                # less between the writer's commit and its view change. One that died in
                # that moment fails the pass as a connection dropped mid-pass does: logged,
                # closed, its tasks left due for the next wake or the sweep.
                if time.monotonic() - passed_at < FRESH_SECONDS and connection.connection:
                    connection.health_check_done = True
                try:
                    project(ids, take_all=True)
                    self.passes += 1
                except Exception:
                    # left to the sweep: a pass never retries in a loop by itself
                    log.exception("projecting %d task(s) failed; the sweep will retry", len(ids))
                    connection.close()
                self._ended()
                close_old_connections()
                passed_at = time.monotonic()

    def drain(self) -> None:
        """At exit: let the thread's pass in flight end, then project what was handed over
        but not yet projected (EXIT_SECONDS in all, at most), so a short-lived process
        (`manage.py emit_event`) leaves nothing to sweep. (Projecting beside a pass in
        flight would skip the tasks it holds, and the process would end that pass
        half-way: its tasks stayed due.)"""
        with self.lock:
            if not self.pending and not self.passing.locked():
                return
        done = threading.Event()

        def run() -> None:
            try:
                with self.passing:
                    if ids := self.take():
                        project(ids, wait=True)
            except Exception:
                log.exception("projecting at exit failed; the sweep will")
            finally:
                connection.close()
                done.set()

        threading.Thread(target=run, name="taskdeck-projector-exit", daemon=True).start()
        done.wait(EXIT_SECONDS)


_projector = Projector()
atexit.register(_projector.drain)


def start() -> None:
    """Start this process's projector thread, when passes run on one (`thread`)."""
    if conf.VIEW.projection == "thread":
        _projector.start()


def wake(event: TaskEvent) -> None:
    """The on-commit subscriber (AguiConfig.ready()): the task of `event` changed. Handed
    to the projector thread, off the writer's path; but when that thread is behind (the
    process writes faster than its one thread projects: pause+resume under bench/load.py
    left PostgreSQL's view 2-4 s behind), the writer waits for the pass of its change
    before it answers (`Projector.add`): the writers that make the load slow down to
    what the projection keeps up with, and a pass still takes many changes together."""
    if conf.VIEW.projection == "sync":
        project([event.task_id], wait=True)
    else:
        _projector.add(event.task_id)
