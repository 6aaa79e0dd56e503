"""Sending alerts: email through Django's mail backend, and an outgoing webhook.

A delivery is tried by a job on the workers (never on the scheduler's tick: a hung SMTP
server or webhook must not hold timeouts back). The job claims the row with a conditional
update (pending, due, not claimed, the attempt count it read), so two jobs for one row
send once; every try is an AlertAttempt row. A failed try is retried after
BACKOFF_SECONDS·2^(n-1), capped at MAX_BACKOFF_SECONDS, by a job queued for that time;
after MAX_ATTEMPTS the delivery is given up. The scheduler's tick queues a job again for a
due delivery nobody tried for a minute (its job was lost with a worker).

The webhook is push's: the same URL rules and the same resolve-check-connect to the
checked address (a2a.push.addresses, a2a.push.delivery.post), so an alert webhook cannot
be aimed at the machine's own services either. Its body is Slack's incoming-webhook shape,
`{"text": …}`; the text names the reason, the task id and skill and the deep link, never
agent text (which could carry a receiver's markup, such as a channel-wide mention).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import httpx
from django.core.mail import send_mail
from django.db.models import Q
from django.utils import timezone

from a2a import conf
from a2a.push import addresses
from a2a.push import delivery as push_delivery

from .models import Alert, AlertAttempt, AlertDelivery

log = logging.getLogger(__name__)

CLAIM_SECONDS = 60.0  # a try takes at most twice the push timeout or EMAIL_TIMEOUT
LOST_SECONDS = 60.0  # a due delivery untried this long lost its job
SWEEP_BATCH = 100


def backoff(attempts: int) -> float:
    base, cap = conf.ALERTS.backoff_seconds, conf.ALERTS.max_backoff_seconds
    return min(base * 2 ** max(attempts - 1, 0), cap)


def message(alert: Alert) -> tuple[str, str]:
    """The subject and body of an alert."""
    subject = f"[Taskdeck] {alert.get_reason_display()}"
    return subject, f"{alert.text}\n\n{alert.link}\n"


def send(row: AlertDelivery) -> None:
    """Send once; raises on failure (AddressRefused: the webhook may not be called)."""
    subject, body = message(row.alert)
    if row.channel == AlertDelivery.Channel.EMAIL:
        recipients = [r.strip() for r in row.target.split(",") if r.strip()]
        send_mail(subject, body, None, recipients, fail_silently=False)
        return
    url = addresses.check_url(row.target)  # ValueError: refused before any connection
    status = push_delivery.post(
        url,
        {"Content-Type": "application/json", "User-Agent": "Taskdeck-alerts/1"},
        {"text": f"[Taskdeck] {alert_line(row.alert)}"},
    )
    if not 200 <= status < 300:
        raise OSError(f"HTTP {status}")


def alert_line(alert: Alert) -> str:
    """The alert as one line, with its link in Slack's <url|label> form."""
    return f"{alert.text} <{alert.link}|Open in Taskdeck>" if alert.link else alert.text


def run(pk: int) -> str:
    """The job: try delivery `pk` once if it is due and nobody else is trying it."""
    now = timezone.now()
    row = AlertDelivery.objects.select_related("alert").filter(pk=pk).first()
    if row is None or row.status != AlertDelivery.Status.PENDING:
        return "done"
    if row.next_attempt_at > now:  # a job for that time is queued already
        return "early"
    taken = (
        AlertDelivery.objects.filter(pk=pk, status=row.status, attempts=row.attempts)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + timedelta(seconds=CLAIM_SECONDS))
    )
    if not taken:
        return "busy"
    error, refused = "", False
    try:
        send(row)
    except (addresses.AddressRefused, ValueError) as exc:
        error, refused = f"refused: the webhook {exc}", True
    except (httpx.HTTPError, OSError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    except Exception as exc:  # a mail backend's own errors: recorded, retried
        error = f"{type(exc).__name__}: {exc}"[:500]
    return _record(row, error, refused, timezone.now())


def _record(row: AlertDelivery, error: str, refused: bool, at: datetime) -> str:
    attempts = row.attempts + 1
    AlertAttempt.objects.create(delivery=row, at=at, ok=not error, error=error)
    fields: dict[str, object] = {
        "attempts": attempts,
        "last_attempt_at": at,
        "last_error": error,
        "claimed_until": None,
    }
    if not error:
        fields.update(status=AlertDelivery.Status.DELIVERED, delivered_at=at)
        outcome = "delivered"
    elif refused:
        fields["status"] = AlertDelivery.Status.REFUSED
        outcome = "refused"
    elif attempts >= conf.ALERTS.max_attempts:
        fields["status"] = AlertDelivery.Status.ABANDONED
        outcome = "abandoned"
    else:
        fields["next_attempt_at"] = at + timedelta(seconds=backoff(attempts))
        outcome = "retry"
    AlertDelivery.objects.filter(pk=row.pk, attempts=row.attempts).update(**fields)
    if outcome == "retry":
        _queue(row.pk, fields["next_attempt_at"])  # type: ignore[arg-type]
    if error:
        log.warning("alert %s by %s: %s (try %d)", row.alert_id, row.channel, error, attempts)
    return outcome


def _queue(pk: int, at: datetime | None = None) -> None:
    from .jobs import deliver_alert

    (deliver_alert.using(run_after=at) if at is not None else deliver_alert).enqueue(pk)


def sweep(now: datetime) -> int:
    """Queue a job again for due deliveries nobody tried for LOST_SECONDS (an index range
    of (status, next_attempt_at), at most SWEEP_BATCH)."""
    lost = now - timedelta(seconds=LOST_SECONDS)
    pks = list(
        AlertDelivery.objects.filter(status=AlertDelivery.Status.PENDING, next_attempt_at__lt=lost)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    if pks:  # not lost again for LOST_SECONDS: one job per sweep, not one per tick
        AlertDelivery.objects.filter(pk__in=pks).update(next_attempt_at=now)
    for pk in pks:
        _queue(pk)
    return len(pks)
