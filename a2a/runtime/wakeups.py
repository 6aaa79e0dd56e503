"""Listens to task events (in the writer's transaction) and queues a run when a task becomes
runnable: created, answered, resumed to work, or given a new user message.

The job row is written in the same transaction as the change (the database backend shares
the connection), so a committed wakeup always has its job and a rolled-back one never does.
A backend outside the database (RQ, Redis) would enqueue on commit instead; the scheduler's
sweep of wanted-but-idle leases covers the gap either way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult, get_date_max

from a2a import skills
from a2a.event_kinds import EventKind, is_user_message
from a2a.lifecycle import State
from a2a.models import TaskEvent
from a2a.prepared import Prepared
from a2a.runtime import doorbell, inline, leases
from a2a.runtime.models import RunLease


def on_task_event(event: TaskEvent) -> None:
    if event.kind != EventKind.RESUMED and not is_user_message(event.kind, event.data):
        return  # the agent's own output wakes nobody
    if event.to_state not in (State.SUBMITTED, State.WORKING):
        return  # e.g. resumed back to input-required: waits for its answer, not for a worker
    if event.task.skill in skills.run_elsewhere():
        return  # run by its provider's own processes (a hosted ACP agent's: a2a.acp_host)
    if event.kind == EventKind.CREATED:
        if not inline.take(event.task_id, event.task.skill):
            _first_run(event.task_id)
    else:
        enqueue(event.task_id, wake=True)


def _first_run(task_id: str) -> None:
    """A new task: its job and its lease, two inserts (it has nothing pending yet)."""
    from a2a.runtime.jobs import run_task

    job = run_task.enqueue(task_id)
    leases.NEW.insert(task_id=task_id, wakeups=1, enqueued_at=timezone.now(), job_id=job.id)


def enqueue(task_id: str, *, run_after: datetime | None = None, wake: bool = False) -> bool:
    """Queue a run of the task unless one is already waiting: at most one pending job per
    task, however often it is woken or the scheduler looks (a job that waits serves every
    wakeup that lands before it starts: it claims the lease with the latest count).
    `wake` counts a wakeup (the task became runnable: answered, resumed, messaged).
    `run_after` defers the job (a retry's backoff); a wakeup without it brings a deferred
    job forward. Returns whether a job row was written. Runs in the caller's transaction
    and locks the task's lease row, so two writers cannot both see "nothing pending"."""
    from a2a.runtime.jobs import run_task

    # No savepoint in the caller's transaction (a resume's, a message's): a failure here
    # fails the whole change anyway, and a savepoint costs two round trips on each.
    with transaction.atomic(savepoint=False):
        lease = (
            leases.LOCK.first(task=task_id)
            or RunLease.objects.select_for_update().get_or_create(task_id=task_id)[0]
        )
        fields: tuple[str, ...] = ()
        if wake:
            lease.wakeups += 1
            lease.enqueued_at = timezone.now()
            fields += ("wakeups", "enqueued_at")
        pending = _pending_job(run_task, lease.job_id)
        if pending is not None:
            # django-tasks-db marks "as soon as possible" with the greatest date
            immediate = get_date_max()
            if pending.run_after != immediate and (
                run_after is None or pending.run_after > run_after
            ):
                pending.run_after = run_after or immediate
                pending.save(update_fields=["run_after"])
                doorbell.ring(at=run_after)  # brought forward: idle workers may take it now
            queued = False
        else:
            job = (run_task.using(run_after=run_after) if run_after else run_task).enqueue(task_id)
            lease.job_id = job.id
            fields += ("job_id",)
            queued = True
        if fields:
            leases.SAVE.save(lease, fields)
        return queued


# Read by every wakeup of a task that ran before (a resume, a message): compiled once
# (a2a/prepared.py says why).
_READY_JOB = Prepared(
    lambda id: DBTaskResult.objects.filter(pk=id, status=TaskResultStatus.READY)[:1],
    "id",
    uuids=("id",),
)


def _pending_job(job_task: Any, job_id: Any) -> Any:
    """The DBTaskResult row of `job_id` if it still waits to be picked up (django-tasks-db);
    None when it was taken, or with a backend that keeps no rows."""
    if job_id is None or not isinstance(job_task.get_backend(), DatabaseBackend):
        return None
    return _READY_JOB.first(id=job_id)
