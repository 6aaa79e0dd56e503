"""Finding what needs a person, on the scheduler's tick (a2a.periodic), in bounded steps.

Each reason reads an index range, never the task table: an approval is a task in
`input-required` or `auth-required` whose status time is before now - APPROVAL_MINUTES, a
failure a `failed` task whose status time is past the last one alerted; both are ranges of
the (state, status_timestamp) index, started at the newest `since` already alerted for the
reason (the (reason, since) index), at most BATCH a tick. The lag is the one aggregate
/healthz makes over the projection's backlog (a table holding only that backlog).

An alert and its deliveries are written in one transaction with the jobs that send them,
under a unique key: two schedulers, or a tick that sees a task again, make no second alert.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone

from a2a import conf, health, periodic
from a2a.lifecycle import State
from a2a.models import Task

from .models import Alert, AlertDelivery

log = logging.getLogger(__name__)

BATCH = 100  # candidates a reason reads per tick; a full batch is due again at the next one
EVERY_SECONDS = 10.0
# With no alert of a reason yet (a new deployment, or one that turned alerts on), how far
# back detection starts: an approval waiting for a week still needs a person; a failure of
# yesterday has been seen.
APPROVAL_LOOKBACK = timedelta(days=7)
FAILED_LOOKBACK = timedelta(hours=1)
WAITING = (State.INPUT_REQUIRED.value, State.AUTH_REQUIRED.value)

_pace = periodic.Paced(EVERY_SECONDS)


def tick() -> int:
    """The periodic job: detect, at most once every EVERY_SECONDS (at once again after a
    full batch); then kick deliveries whose job was lost."""
    if not _pace.due():
        return 0
    from . import delivery

    now = timezone.now()
    (asked, full_a), (failed, full_f) = approvals(now), failures(now)
    made = asked + failed + lag(now)
    _pace.ran(more=full_a or full_f)
    return made + delivery.sweep(now)


def link_for(task_id: str = "") -> str:
    """The absolute deep link: the task's page (the health check for the lag), under
    TASKDECK_PUBLIC_URL (else the web processes' URL; else a path, and the docs say so)."""
    base = (conf.TASKDECK.public_url or conf.TASKDECK.web_url).rstrip("/")
    path = reverse("task-detail", args=[task_id]) if task_id else "/healthz"
    return base + path


def _start(reason: str, default: datetime) -> datetime:
    newest = Alert.objects.filter(reason=reason).aggregate(m=Max("since"))["m"]
    return newest if newest is not None else default


def approvals(now: datetime) -> tuple[int, bool]:
    """Tasks waiting for a person longer than APPROVAL_MINUTES, oldest first: how many
    alerts were made, and whether a full batch was read (more may be waiting)."""
    minutes = conf.ALERTS.approval_minutes
    if not minutes:
        return 0, False
    before = now - timedelta(minutes=minutes)
    start = _start(Alert.Reason.APPROVAL, before - APPROVAL_LOOKBACK)
    rows = list(
        Task.objects.filter(
            state__in=WAITING, status_timestamp__gte=start, status_timestamp__lt=before
        )
        .order_by("status_timestamp", "id")
        .values_list("id", "skill", "status_timestamp", "input_request_count")[:BATCH]
    )
    made = 0
    for task_id, skill, since, question in rows:
        waited = int((now - since).total_seconds() // 60)
        made += record(
            f"approval:{task_id}:{question}",
            Alert.Reason.APPROVAL,
            since,
            f"Approval waiting {waited} min: task {task_id} ({skill or 'no skill'})",
            task_id,
        )
    return made, len(rows) >= BATCH


def failures(now: datetime) -> tuple[int, bool]:
    """Tasks that failed since the last failure alerted, oldest first (as `approvals`)."""
    if not conf.ALERTS.failed:
        return 0, False
    start = _start(Alert.Reason.FAILED, now - FAILED_LOOKBACK)
    rows = list(
        Task.objects.filter(state=State.FAILED, status_timestamp__gte=start)
        .order_by("status_timestamp", "id")
        .values_list("id", "skill", "status_timestamp")[:BATCH]
    )
    made = 0
    for task_id, skill, since in rows:
        made += record(
            f"failed:{task_id}",
            Alert.Reason.FAILED,
            since,
            f"Task failed: {task_id} ({skill or 'no skill'})",
            task_id,
        )
    return made, len(rows) >= BATCH


def lag(now: datetime) -> int:
    """The live view lagging past LAG_SECONDS: one alert per episode (it ends when the lag
    is back under the bound)."""
    bound = conf.ALERTS.lag_seconds
    if not bound:
        return 0
    found = health.projection_lag()
    open_ = Alert.objects.filter(reason=Alert.Reason.LAG, ended_at__isnull=True)
    if found.seconds <= bound:
        open_.update(ended_at=now)
        return 0
    if open_.exists():
        return 0
    since = now - timedelta(seconds=found.seconds)
    return record(
        f"lag:{since.isoformat()}",
        Alert.Reason.LAG,
        since,
        f"The live view lags {found.seconds:.0f} s behind ({found.due_tasks} tasks, "
        f"{found.due_rows} events not projected; the bound is {bound:g} s)",
        "",
    )


def channels() -> list[tuple[str, str]]:
    """The configured channels: (channel, target)."""
    out = []
    if conf.ALERTS.emails:
        out.append((AlertDelivery.Channel.EMAIL.value, ", ".join(conf.ALERTS.emails)))
    if conf.ALERTS.webhook:
        out.append((AlertDelivery.Channel.WEBHOOK.value, conf.ALERTS.webhook))
    return out


def record(key: str, reason: str, since: datetime, text: str, task_id: str) -> int:
    """Record the alert, a delivery per channel and their jobs, once per key: 1 if it is
    new, 0 if it was there already."""
    from .jobs import deliver_alert

    if Alert.objects.filter(key=key).exists():
        return 0
    now = timezone.now()
    link = link_for(task_id)
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                key=key,
                reason=reason,
                task_id=task_id,
                since=since,
                text=text,
                link=link,
                created_at=now,
            )
            for channel, target in channels():
                row = AlertDelivery.objects.create(
                    alert=alert, channel=channel, target=target, next_attempt_at=now
                )
                deliver_alert.enqueue(row.pk)
    except IntegrityError:  # another scheduler recorded it first
        return 0
    log.warning("alert: %s (%s)", text, link)
    return 1
