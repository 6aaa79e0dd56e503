"""The scheduler: fires due timeouts and hands runs of dead workers to live ones.

Everything it acts on is in the database (deadlines, leases), so a restarted scheduler
picks up where the last one stopped, and two schedulers only duplicate harmless work
(`expire_suspension` and `claim` are idempotent under the row lock).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.db import close_old_connections, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import conf, periodic, services, skills
from a2a.models import Suspension
from a2a.runtime import beats, leases
from a2a.runtime.faults import discard_connections, is_infrastructure
from a2a.runtime.models import RunLease, WorkerBeat
from a2a.runtime.wakeups import enqueue

log = logging.getLogger(__name__)


def fire_due_timeouts(limit: int = 200) -> int:
    handles = list(
        Suspension.objects.filter(ended_at__isnull=True, deadline__lte=timezone.now())
        .order_by("deadline")
        .values_list("handle", flat=True)[:limit]
    )
    fired = 0
    for handle in handles:
        try:
            if services.expire_suspension(handle, actor=services.SCHEDULER) is not None:
                fired += 1
        except Exception:  # one bad row must not stop every other deadline
            log.exception("timeout of %s failed", handle)
    return fired


def recover_runs(*, trust_beats: bool = False) -> int:
    """Re-queue runs whose worker died (lease expired, or — with `trust_beats` — its beat
    stopped) or whose job was lost (wanted, idle, queued long ago). Only runs of this
    runtime's agents: hosted ACP agents' sessions are their supervisors' (a2a.acp_host),
    and a worker would fail them for want of an agent. A dead worker's lease
    is freed here, under the row lock and only if that worker still holds it, so another
    worker's claim succeeds at once. `enqueue` queues nothing while a job already waits
    for the task: the scheduler can look every tick without flooding the queue."""
    now = timezone.now()
    requeue_after = timedelta(seconds=conf.RUNTIME.requeue_seconds)
    dead = beats.dead_workers(now) if trust_beats else set()
    stale = Q(owner__gt="", expires_at__lt=now) | Q(owner__in=dead)
    lost = Q(owner="", enqueued_at__lt=now - requeue_after) & ~Q(wakeups=F("served"))
    task_ids = list(
        RunLease.objects.filter(stale | lost)
        .filter(task__state__in=leases.RUNNABLE)
        .exclude(task__skill__in=skills.run_elsewhere())
        .values_list("task_id", flat=True)[:200]
    )
    queued = 0
    for task_id in task_ids:
        with transaction.atomic():
            lease = RunLease.objects.select_for_update().get(task_id=task_id)
            if lease.owner and (lease.owner in dead or (lease.expires_at or now) < now):
                log.info("taking task %s over from %s", task_id, lease.owner)
                lease.owner, lease.expires_at = "", None
            lease.enqueued_at = now
            lease.save(update_fields=["owner", "expires_at", "enqueued_at"])
            queued += enqueue(task_id)
    return queued


def reclaim_jobs(*, trust_beats: bool, suspects: dict[str, datetime] | None = None) -> int:
    """Mark the job rows that no worker runs any more: django-tasks-db leaves a SIGKILLed
    worker's row RUNNING forever. A row is reclaimed when its worker's beat stopped, or
    when its (living) worker beats for another job — its final status could not be
    written, e.g. while the database was away. Rows of workers that never beat (a plain
    db_worker) are left alone: nothing says they are dead.

    A living worker's beat can name the job before this one: the beat thread may read
    the job it runs between the claim and django-tasks' task_started signal, or be held
    up while the worker runs. So "runs another job" is believed only from two different
    beats: the first sight is remembered in `suspects` (job id → that beat's time, kept by
    the scheduler across ticks) and the row is marked when a later beat still disagrees.
    Without `suspects` such rows are never marked."""
    if not trust_beats:
        return 0
    now = timezone.now()
    settled = now - timedelta(seconds=beats.dead_seconds())
    seen = {b.worker: b for b in WorkerBeat.objects.all()}
    reclaimed = 0
    still: set[str] = set()
    rows = DBTaskResult.objects.running().filter(started_at__lt=settled)
    for job_id, worker_ids in rows.values_list("id", "worker_ids")[:500]:
        beat = seen.get(worker_ids[-1] if worker_ids else "")
        if beat is None:
            continue
        if beat.beat_at < settled:
            why = f"worker {beat.worker} died (no beat since {beat.beat_at.isoformat()})"
        elif beat.job_id != job_id and suspects is not None:
            key = str(job_id)
            first = suspects.setdefault(key, beat.beat_at)
            if beat.beat_at <= first:
                still.add(key)
                continue
            why = f"worker {beat.worker} is alive but no longer runs this job"
        else:
            continue
        reclaimed += DBTaskResult.objects.filter(pk=job_id, status=TaskResultStatus.RUNNING).update(
            status=TaskResultStatus.FAILED,
            finished_at=now,
            exception_class_path="a2a.runtime.beats.WorkerLost",
            traceback=why,
        )
    if suspects is not None:  # a row that agreed again, or ended, is no longer suspect
        for key in set(suspects) - still:
            del suspects[key]
    return reclaimed


PRUNE_BATCH = 5000  # job rows deleted per statement: a backlog drains in steps


def prune(retention_hours: float, *, limit: int | None = None) -> int:
    """Delete finished job rows and beats of long-gone workers older than the retention,
    at most `limit` job rows per call, oldest first: the job table stays the size of
    recent work, and no call holds a long lock. The read walks the index on finished_at
    (migration runtime 0003), so it costs the same at a million rows as at a thousand."""
    cutoff = timezone.now() - timedelta(hours=retention_hours)
    oldest = (
        DBTaskResult.objects.finished()
        .filter(finished_at__lt=cutoff)
        .order_by("finished_at")
        .values("id")[: limit or PRUNE_BATCH]
    )
    # one statement, the ids as a subquery: no list of `limit` parameters (old SQLite
    # builds take 999)
    deleted, _ = DBTaskResult.objects.filter(pk__in=oldest).delete()
    WorkerBeat.objects.filter(beat_at__lt=cutoff).delete()
    return deleted


class Health:
    """How long the scheduler has reached the database without a break. Beats are only
    believed after DEAD_SECONDS of that: when the database was away, every worker's beat
    is old, and none of them is dead for it."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.pruned_at = 0.0
        self.suspects: dict[str, datetime] = {}  # see reclaim_jobs

    def ok(self) -> None:
        if self.since is None:
            self.since = time.monotonic()

    def broken(self) -> None:
        self.since = None

    def trusts_beats(self) -> bool:
        return self.since is not None and time.monotonic() - self.since >= beats.dead_seconds()


PRUNE_EVERY_SECONDS = 60.0


def tick(health: Health | None = None) -> tuple[int, int]:
    health = health or Health()
    close_old_connections()
    try:
        trust = health.trusts_beats()
        fired, recovered = fire_due_timeouts(), recover_runs(trust_beats=trust)
        reclaimed = reclaim_jobs(trust_beats=trust, suspects=health.suspects)
        if reclaimed:
            log.info("scheduler: %d job rows of dead workers marked failed", reclaimed)
        if time.monotonic() - health.pruned_at >= PRUNE_EVERY_SECONDS:
            pruned = prune(conf.RUNTIME.job_retention_hours, limit=PRUNE_BATCH)
            # a full batch: more are waiting (a backlog after an upgrade), next tick again
            health.pruned_at = 0.0 if pruned >= PRUNE_BATCH else time.monotonic()
    except Exception:
        health.broken()
        raise
    health.ok()
    # other apps' periodic work (a2a.periodic): the runtime never imports them
    for job in periodic.jobs():
        try:
            job()
        except Exception:
            log.exception("periodic %s failed", getattr(job, "__name__", job))
    return fired, recovered


def loop(interval: float, *, iterations: int | None = None) -> None:
    n = 0
    health = Health()
    while iterations is None or n < iterations:
        started = time.monotonic()
        try:
            fired, recovered = tick(health)
            if fired or recovered:
                log.info("scheduler: %d timeouts fired, %d runs re-queued", fired, recovered)
        except Exception as exc:
            if is_infrastructure(exc):
                discard_connections()
                log.warning("scheduler tick: database unavailable: %s", exc)
            else:
                log.exception("scheduler tick failed")
        n += 1
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
