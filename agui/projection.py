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
  busier the process, the more a pass coalesces.
- `sync`: the same subscriber projects on the committing thread, right after the commit
  (the writer's call returns with its view change committed; the test suite runs this).
- Either way the scheduler's tick runs `sweep`: due rows older than SWEEP_AFTER_SECONDS
  (their process died between the commit and the pass, or its pass failed) are projected
  there. A projector thread sweeps everything once when it starts.
- `catch_up(task_ids)`: project these tasks now on this thread, waiting for a pass in
  flight: what an operator's own action needs before the page shows its result.

The lag (age of the oldest due row) is `lag()`: /healthz and the benches read it.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.db import close_old_connections, connection, transaction
from django.db.models import Min, Q
from django.utils import timezone

from a2a import conf
from a2a.event_kinds import EventKind, is_agent_text
from a2a.models import Message, ProjectionDue, Suspension, Task, TaskEvent
from agui import projector, view
from agui.models import AguiRun, ViewTask

log = logging.getLogger(__name__)

BATCH = 64  # tasks per pass: on SQLite writers wait behind one pass at most this big
SWEEP_AFTER_SECONDS = 2.0  # a due row this old was left by a process that died (or failed)
SWEEP_TASKS = 200  # tasks per sweep: a backlog drains in steps
AGAIN_ROUNDS = 3  # a pass looks again this often for what committed while it held tasks
CATCH_UP_SECONDS = 1.0  # the most an operator's request waits for a pass in flight
EXIT_SECONDS = 2.0  # a process that exits projects what it has not yet, this long at most
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
            # set_config, not `SET LOCAL … = %s`: with server-side binding (dashboard
            # settings) a parameter cannot stand in a SET statement
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)", [f"{int(CATCH_UP_SECONDS * 1000)}ms"]
            )
            for task_id in task_ids:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LOCK_CLASS, task_id]
                )
            return task_ids
        cursor.execute(
            "SELECT t FROM unnest(%s::text[]) AS t "
            "WHERE pg_try_advisory_xact_lock(%s, hashtext(t))",
            [task_ids, LOCK_CLASS],
        )
        held = {row[0] for row in cursor.fetchall()}
    return [t for t in task_ids if t in held]


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
    events = TaskEvent.objects.filter(task_id=task.pk, task_version__lte=task.version)
    if last_id is not None:  # by the (task, id) index: within a task, id order is version order
        events = events.filter(id__gt=last_id)
    else:
        events = events.filter(task_version__gt=done)
    found = list(events.order_by("id"))
    versions = [e.task_version for e in found]
    if versions and versions != list(range(versions[0], versions[0] + len(versions))):
        log.error("task %s: events out of order for the projection: %s", task.pk, versions)
    return found


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
    match = Q()
    for task_id, seqs in wanted.items():
        if seqs:
            match |= Q(task_id=task_id, seq__in=sorted(seqs))
    if match:
        for msg in Message.objects.filter(match):
            refs.messages[(msg.task_id, msg.seq)] = msg
    if handles:
        refs.suspensions = {s.handle: s for s in Suspension.objects.filter(handle__in=handles)}
    return refs


def _runs(task_ids: list[str]) -> dict[str, str]:
    """Each task's newest AG-UI run: the entry's lastRunId (a run's row commits with the
    writes it made, agui.bridge)."""
    newest: dict[str, str] = {}
    rows = AguiRun.objects.filter(task_id__in=task_ids).order_by("started_at", "run_id")
    for task_id, run_id in rows.values_list("task_id", "run_id"):
        newest[task_id] = run_id
    return newest


def _pass(task_ids: list[str], wait: bool) -> list[str]:
    """One transaction: project every task of `task_ids` this pass can hold; returns them."""
    with transaction.atomic():
        held = _claim(task_ids, wait)
        if not held:
            return held
        tasks = Task.objects.filter(pk__in=held).select_related("status_message")
        tasks = {t.pk: t for t in tasks}  # read before the events (the module's docstring)
        views = {v.task_id: v for v in ViewTask.objects.filter(task_id__in=held)}
        plans, through = [], {}
        for task_id in held:
            task = tasks.get(task_id)
            if task is None:  # gone (deleted): its due rows go too
                through[task_id] = None
                continue
            events = _unprojected(task, views.get(task_id))
            through[task_id] = task.version
            if events:
                plans.append((task, views.get(task_id), events))
        rows: list = []
        if plans:
            refs, runs = _refs(plans), _runs([p[0].pk for p in plans])
            for task, current, events in plans:
                rows += projector.project_task(task, current, events, refs, runs.get(task.pk))
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


def _consumed(through: dict[str, int | None]) -> None:
    """Delete the due rows the pass projected: per task, versions up to the one read."""
    gone = Q()
    for task_id, version in through.items():
        gone |= (
            Q(task_id=task_id) if version is None else Q(task_id=task_id, task_version__lte=version)
        )
    if gone:
        ProjectionDue.objects.filter(gone).delete()  # no relations, no signals: one DELETE


def _still_due(task_ids: list[str]) -> list[str]:
    """Of these tasks, those with due rows now (committed while a pass held them)."""
    found = ProjectionDue.objects.filter(task_id__in=task_ids).values_list("task_id", flat=True)
    return sorted(set(found))


def project(task_ids: Iterable[str], *, wait: bool = False) -> set[str]:
    """Project the committed, unprojected events of these tasks, BATCH at a time; returns
    the tasks it projected. A task another pass holds is skipped (`wait`: waited for); on
    PostgreSQL, once its passes committed, it looks again for what committed meanwhile
    (a writer whose own wake found the task held), AGAIN_ROUNDS times at most (the sweep
    takes what is left)."""
    # Only tasks with due rows, read outside any write transaction: a task projected since
    # it was handed over (three events of one transaction wake three times; another
    # process's pass took it) costs this read, not a pass (on SQLite: not the write lock).
    todo = _still_due(sorted(set(task_ids)))
    done: set[str] = set()
    for _ in range(AGAIN_ROUNDS if _postgres() else 1):
        held: list[str] = []
        for i in range(0, len(todo), BATCH):
            held += _pass(todo[i : i + BATCH], wait)
        done.update(held)
        if not held or not _postgres():
            break
        todo = _still_due(held)
        if not todo:
            break
    return done


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
    pass, or its pass failed. Returns how many tasks it projected."""
    return len(project(due_tasks(older_than)))


def project_due() -> int:
    """Project every due row now (tests; a projector thread's start): how many tasks."""
    total = 0
    while ids := due_tasks():
        done = project(ids, wait=True)
        total += len(done)
        if not done:
            break
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


@dataclass
class Lag:
    """How far the view is behind the tasks: the age of the oldest due row."""

    seconds: float
    due_rows: int
    due_tasks: int


def lag() -> Lag:
    """Two statements over a table that holds only the backlog."""
    oldest = ProjectionDue.objects.aggregate(first=Min("at"))["first"]
    if oldest is None:
        return Lag(0.0, 0, 0)
    rows = ProjectionDue.objects.count()
    tasks = ProjectionDue.objects.values("task_id").distinct().count()
    return Lag(max(0.0, (timezone.now() - oldest).total_seconds()), rows, tasks)


class Projector:
    """The process's projector thread: woken with the ids of tasks that changed, it
    projects them, as many as came in since its last pass, in one go."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.lock = threading.Lock()
        self.woken = threading.Event()
        self.thread: threading.Thread | None = None
        self.passes = 0

    def add(self, task_id: str) -> None:
        with self.lock:
            self.pending.add(task_id)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self._run, name="taskdeck-projector", daemon=True
                )
                self.thread.start()
        self.woken.set()

    def take(self) -> list[str]:
        with self.lock:
            ids, self.pending = self.pending, set()
        return sorted(ids)

    def _run(self) -> None:
        try:
            project_due()  # what a previous life of this process (or another) left
        except Exception:
            log.exception("the projector's first sweep failed; the scheduler's will retry")
            connection.close()
        while True:
            self.woken.wait()
            self.woken.clear()
            ids = self.take()
            if not ids:
                continue
            try:
                project(ids)
                self.passes += 1
            except Exception:
                # left to the sweep: a pass never retries in a loop by itself
                log.exception("projecting %d task(s) failed; the sweep will retry", len(ids))
                connection.close()
            close_old_connections()

    def drain(self) -> None:
        """At exit: project what was handed over but not yet projected (EXIT_SECONDS at
        most), so a short-lived process (`manage.py emit_event`) leaves nothing to sweep."""
        ids = self.take()
        if not ids:
            return
        done = threading.Event()

        def run() -> None:
            try:
                project(ids)
            except Exception:
                log.exception("projecting at exit failed; the sweep will")
            finally:
                connection.close()
                done.set()

        threading.Thread(target=run, name="taskdeck-projector-exit", daemon=True).start()
        done.wait(EXIT_SECONDS)


_projector = Projector()
atexit.register(_projector.drain)


def wake(event: TaskEvent) -> None:
    """The on-commit subscriber (AguiConfig.ready()): the task of `event` changed."""
    if conf.VIEW.projection == "sync":
        project([event.task_id], wait=True)
    else:
        _projector.add(event.task_id)
