"""The scheduler: fires due timeouts and hands runs of dead workers to live ones.

Everything it acts on is in the database (deadlines, leases), so a restarted scheduler
picks up where the last one stopped, and two schedulers only duplicate harmless work
(`expire_suspension` and `claim` are idempotent under the row lock).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from a2a import services
from a2a.models import Suspension
from a2a.runtime import leases
from a2a.runtime.models import RunLease
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


def recover_runs() -> int:
    """Re-queue runs whose worker died (lease expired) or whose job was lost (wanted,
    idle, queued long ago). A duplicate job is harmless: it finds the lease taken."""
    now = timezone.now()
    requeue_after = timedelta(seconds=float(settings.TASKDECK["RUNTIME"]["REQUEUE_SECONDS"]))
    stale = Q(owner__gt="", expires_at__lt=now)
    lost = Q(owner="", enqueued_at__lt=now - requeue_after) & ~Q(wakeups=F("served"))
    task_ids = list(
        RunLease.objects.filter(stale | lost)
        .filter(task__state__in=leases.RUNNABLE)
        .values_list("task_id", flat=True)[:200]
    )
    for task_id in task_ids:
        with transaction.atomic():
            RunLease.objects.filter(task_id=task_id).update(enqueued_at=now)
            enqueue(task_id)
    return len(task_ids)


# Periodic work of other apps, registered from their AppConfig.ready() (a2a.push: kick
# webhook deliveries whose job was lost), so the runtime never imports them. Each returns
# how much it did; a failure is logged and never stops the tick.
PERIODIC: list[Callable[[], int]] = []


def tick() -> tuple[int, int]:
    close_old_connections()
    fired, recovered = fire_due_timeouts(), recover_runs()
    for periodic in PERIODIC:
        try:
            periodic()
        except Exception:
            log.exception("periodic %s failed", getattr(periodic, "__name__", periodic))
    return fired, recovered


def loop(interval: float, *, iterations: int | None = None) -> None:
    n = 0
    while iterations is None or n < iterations:
        started = time.monotonic()
        try:
            fired, recovered = tick()
            if fired or recovered:
                log.info("scheduler: %d timeouts fired, %d runs re-queued", fired, recovered)
        except Exception:
            log.exception("scheduler tick failed")
        n += 1
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
