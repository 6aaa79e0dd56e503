"""Retention of the AG-UI log (AguiEvent): which rows may go, and when.

Who reads the log, and what for:
- each web process's Tailer (agui/fanout.py): the rows after its cursor, for its sockets;
- a socket filling a version gap of a task it holds (agui/consumers.py, `_missing`);
- a run stream (agui/runs.py): its own task's rows after the run's opening cursor.
A socket holds only tasks in the live view (it drops rows of tasks it does not hold), a
run ends when its task stops, and every socket and run opens with a snapshot: no client
holds a cursor into the log. So once a task has finished and left the view, and no run
streams it, nobody reads its rows again (the task page's timeline reads TaskEvents and
Interrupts, not this log; the board reads ViewTask).

The rule: the rows of a task go when it finished more than
TASKDECK_AGUI_EVENT_RETENTION_HOURS ago (its view row's updated_at: finished is final, so
nothing moves it afterwards), it has left the live view (its EVICTION is logged) and no
AG-UI run of it is open (AguiRun outcome ""). Open tasks, tasks still in the view and
tasks a run streams keep theirs. A run killed without recording its outcome keeps its
task's rows: a leak of one task's rows per killed run, never a gap.

Never a silent gap: LogRetention.horizon is the highest id deleted. A Tailer whose cursor
is below it had not read every row deleted (a process stalled for longer than the
retention), and sends every socket a fresh snapshot (agui/fanout.py).

Bounded work: the scheduler calls `prune_now_and_then` (registered with a2a.periodic by
AguiConfig.ready()). One call scans at most TASKS_PER_CALL view rows from where the last
one stopped (LogRetention's position, walking the index on ViewTask.updated_at) and
deletes at most ROWS_PER_CALL rows (found by the aguievent_task_id index), in one short
transaction; once a minute, and at every tick while a backlog remains, so the backlog an
upgrade finds drains in steps and no call holds a long lock. Each finished task is
scanned once: the position moves past tasks whose rows are all gone, and past those
an AG-UI run still had open when the scan came by (their rows are kept for good, like a
killed run's above: stopping there instead would let one killed run hold the position).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from a2a import conf, periodic
from agui import view
from agui.models import AguiEvent, AguiRun, LogRetention, ViewTask

ROWS_PER_CALL = 5000
TASKS_PER_CALL = 500  # ids in one IN (…): below the 999 parameters of old SQLite builds
IN_SLICE = 900
PRUNE_EVERY_SECONDS = 60.0
PACE = periodic.Paced(PRUNE_EVERY_SECONDS)


def cutoff(now: datetime) -> datetime:
    """Tasks that finished before this have their rows deleted (once out of the view)."""
    return now - timedelta(hours=conf.VIEW.event_retention_hours)


@dataclass(frozen=True)
class Pruned:
    rows: int  # log rows deleted
    more: bool  # a bound was reached: more may be waiting (call again soon)


def prune(
    now: datetime | None = None, *, rows: int = ROWS_PER_CALL, tasks: int = TASKS_PER_CALL
) -> Pruned:
    """Delete up to `rows` log rows of tasks past the retention (the module's docstring
    says which), scanning at most `tasks` view rows. Safe with two schedulers: the
    position row is locked for the call."""
    before = cutoff(now or timezone.now())
    with transaction.atomic():
        LogRetention.objects.get_or_create(pk=1)
        state = LogRetention.objects.select_for_update().get(pk=1)
        scan = ViewTask.objects.filter(updated_at__lt=before)
        if state.through_updated_at is not None:
            scan = scan.filter(updated_at__gte=state.through_updated_at).exclude(
                updated_at=state.through_updated_at, task_id__lte=state.through_task
            )
        scanned = list(
            scan.order_by("updated_at", "task_id").values_list(
                "task_id", "updated_at", "in_view", "status"
            )[:tasks]
        )
        doomed: list[str] = []
        passed: tuple[datetime, str] | None = None
        waiting = False
        for task_id, updated_at, in_view, status in scanned:
            finished = status in view.FINISHED
            if finished and in_view:
                waiting = True  # not evicted yet (an eviction backlog): wait here for it
                break
            if finished:
                doomed.append(task_id)
            # an open task is passed: when it changes, its updated_at moves past here
            passed = (updated_at, task_id)
        streamed = set(
            AguiRun.objects.filter(task_id__in=doomed, outcome="").values_list("task_id", flat=True)
        )
        doomed = [t for t in doomed if t not in streamed]
        ids = list(AguiEvent.objects.filter(task_id__in=doomed).values_list("id", flat=True)[:rows])
        for start in range(0, len(ids), IN_SLICE):
            AguiEvent.objects.filter(pk__in=ids[start : start + IN_SLICE]).delete()
        if ids and max(ids) > state.horizon:
            state.horizon = max(ids)
        if len(ids) < rows and passed is not None:  # every row of the scanned tasks is gone
            state.through_updated_at, state.through_task = passed
        state.save()
    return Pruned(len(ids), more=len(ids) >= rows or (len(scanned) >= tasks and not waiting))


def prune_now_and_then() -> int:
    """The scheduler's periodic job: `prune` at most once every PRUNE_EVERY_SECONDS per
    process, and again at the next tick while a full batch says more are waiting."""
    if not PACE.due():
        return 0
    pruned = prune()
    PACE.ran(more=pruned.more)
    return pruned.rows


def horizon() -> int:
    """The highest AguiEvent id the retention deleted (0: none yet)."""
    return LogRetention.objects.filter(pk=1).values_list("horizon", flat=True).first() or 0
