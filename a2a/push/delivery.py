"""Delivering task events to webhooks: durable, in order per config, retried with backoff.

1. `on_task_event` (in the event's own transaction) records a PushDelivery per config of
   the event's task, for the events a stream would show (streaming.events_after: status
   changes, agent messages, artifacts), and kicks the config: queues one delivery job
   unless one is already queued. Both commit with the event, or not at all.
2. The job (`jobs.deliver_push` → `run`) takes the config's lease, so one job at a time
   delivers for a config, and pumps: it first scans the TaskEvent log past the config's
   `scanned_through` (catching up events recorded nowhere, e.g. committed before an inline
   config was stored, or lost with a crashed writer), then POSTs pending deliveries in
   event order. Event k waits until event k-1 is delivered or given up. Each row update
   is fenced by the lease, so a job that outlived it cannot overwrite its successor.
3. A failed attempt is retried after BACKOFF_SECONDS·2^(n-1) (capped), by a job deferred
   to that time, so the worker is not held while waiting; after MAX_ATTEMPTS it is
   abandoned and the next event goes. One HTTP call lasts at most TIMEOUT_SECONDS per
   phase and twice that per attempt (a webhook dripping bytes cannot hold a worker), and
   one job delivers for at most JOB_SECONDS, then queues a successor: a slow or dead
   webhook delays its own config only.
4. Before each POST the host is resolved and every address checked (a2a.push.addresses);
   the connection goes to the checked address, so DNS cannot change the answer between
   the check and the request. Redirects are not followed.

Delivery is at least once: a webhook that answers after its timeout sees the event again.
Every request carries `X-Taskdeck-Event-Id` so the receiver can drop repeats.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import ssl
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.fields.json import KT
from django.utils import timezone

from a2a import conf
from a2a.event_kinds import STATUS_KINDS, EventKind, is_agent_text
from a2a.lifecycle import Dialect
from a2a.models import Task, TaskEvent
from a2a.prepared import Prepared
from a2a.protocol import stream as streaming

from . import addresses
from .models import PushConfig, PushDelivery

log = logging.getLogger(__name__)

WORKER = f"{socket.gethostname()}:{os.getpid()}"
JOB_SECONDS = 10.0  # one job delivers for at most this long, then queues a successor
KICK_STALE_SECONDS = 60.0  # a queued job not started after this long is presumed lost
SWEEP_EVERY_SECONDS = 30.0
SCAN_BATCH = 500
EVENT_ID_HEADER = "X-Taskdeck-Event-Id"
TOKEN_HEADER = "X-A2A-Notification-Token"
_last_sweep = 0.0


def deliverable(kind: str, role: str | None) -> bool:
    """Does a stream show this event? (The same rule as streaming.events_after.)"""
    return (
        kind in STATUS_KINDS
        or kind == EventKind.ARTIFACT_ADDED
        or is_agent_text(kind, {"role": role})
    )


# --- Recording and kicking ------------------------------------------------------------------


# Read for every status event, compiled once (a2a/prepared.py says why).
_CONFIGS_OWED = Prepared(
    lambda task, event: PushConfig.objects.filter(task_id=task, start_after__lt=event).values_list(
        "pk"
    ),
    "task",
    "event",
    ints=("event",),
)


def on_task_event(event: TaskEvent) -> None:
    """In-transaction subscriber: the event is owed to every config of its task that
    existed before it. The delivery rows and the job that sends them commit with the event
    itself, so no crash between commit and an after-commit hook can lose one. (Configs of
    a task change under the same task row lock, so none can vanish meanwhile.) A failure
    here is logged and never undoes the task's change: `_scan` and the sweep catch up."""
    if not deliverable(event.kind, (event.data or {}).get("role")):
        return
    # Read before the savepoint: most tasks have no webhook, and a savepoint costs two
    # round trips per event (a failing read fails the writer's transaction either way)
    configs = [pk for (pk,) in _CONFIGS_OWED.fetch(task=event.task_id, event=event.pk)]
    if not configs:
        return
    try:
        with transaction.atomic():
            now = timezone.now()
            PushDelivery.objects.bulk_create(
                [
                    PushDelivery(
                        config_id=pk, event_id=event.pk, created_at=now, next_attempt_at=now
                    )
                    for pk in configs
                ],
                ignore_conflicts=True,
            )
            for pk in configs:
                kick(pk, now)
    except Exception:
        log.exception("push: could not record event %s for its webhooks", event.pk)


def kick(config_pk: int, now: datetime | None = None) -> bool:
    """Queue a delivery job for the config, unless one is queued and has not started yet
    (or the config is gone). The job clears the mark when it starts."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=KICK_STALE_SECONDS)
    with transaction.atomic():
        marked = (
            PushConfig.objects.filter(pk=config_pk)
            .filter(Q(kicked_at__isnull=True) | Q(kicked_at__lt=stale))
            .update(kicked_at=now)
        )
        if marked:
            _enqueue(config_pk)
    return bool(marked)


def _enqueue(config_pk: int, at: datetime | None = None) -> None:
    from .jobs import deliver_push

    job = deliver_push.using(run_after=at) if at is not None else deliver_push
    job.enqueue(config_pk)


def sweep(limit: int = 100) -> int:
    """Kick configs that are owed a due delivery nobody is working on (their job was lost
    with a worker that died), or whose task has events they have not scanned (a recording
    that failed). Cheap (indexed); safe to call from any number of processes. Counted per
    config, so one config with a long backlog cannot hide the others."""
    now = timezone.now()
    overdue = now - timedelta(seconds=KICK_STALE_SECONDS)
    config_pks = set(
        PushDelivery.objects.filter(status=PushDelivery.Status.PENDING, next_attempt_at__lt=overdue)
        .order_by()
        .values_list("config_id", flat=True)
        .distinct()[:limit]
    )
    newest = TaskEvent.objects.filter(task_id=OuterRef("task_id")).order_by("-id").values("id")[:1]
    behind = (
        PushConfig.objects.filter(task__updated_at__gt=now - timedelta(days=1))
        .annotate(newest=Subquery(newest))
        .filter(scanned_through__lt=F("newest"), start_after__lt=F("newest"))
        .filter(Q(kicked_at__isnull=True) | Q(kicked_at__lt=overdue))
        .values_list("pk", flat=True)[:limit]
    )
    config_pks.update(behind)
    idle = PushConfig.objects.filter(pk__in=config_pks).filter(
        Q(pump_until__isnull=True) | Q(pump_until__lt=now)
    )
    return sum(kick(pk, now) for pk in idle.values_list("pk", flat=True))


# --- The pump -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    what: str  # idle | busy | gone | more | waiting | lost
    at: datetime | None = None  # waiting: when the head delivery is due
    scheduled: bool = False  # waiting: a job for `at` must be queued by us


def run(config_pk: int) -> str:
    """The job: deliver what the config is owed, in order, for at most JOB_SECONDS."""
    sweep_now_and_then()
    deadline = time.monotonic() + JOB_SECONDS
    while True:
        token = _claim(config_pk)
        if token is None:
            holder = PushConfig.objects.filter(pk=config_pk).values_list("pump_until", flat=True)
            if not holder.exists():
                return "gone"
            # Another job holds it. If that job dies, try again when its lease runs out.
            _enqueue(config_pk, at=(holder.first() or timezone.now()) + timedelta(seconds=1))
            return "busy"
        try:
            outcome = _pump(config_pk, token, deadline)
        finally:
            _release(config_pk, token)
        if outcome.what == "more":
            _enqueue(config_pk)
        elif outcome.what == "waiting" and outcome.scheduled:
            _enqueue(config_pk, at=outcome.at)
        elif (
            outcome.what == "idle"
            and time.monotonic() < deadline
            and PushConfig.objects.filter(pk=config_pk, kicked_at__isnull=False).exists()
        ):
            continue  # an event kicked while we held the lease; its job may have found us busy
        return outcome.what


def sweep_now_and_then() -> int:
    """`sweep`, at most once every SWEEP_EVERY_SECONDS per process: run by every delivery
    job and by the scheduler's tick (which covers the case where no job runs at all)."""
    global _last_sweep
    if time.monotonic() - _last_sweep < SWEEP_EVERY_SECONDS:
        return 0
    _last_sweep = time.monotonic()
    try:
        return sweep()
    except Exception:
        log.exception("push sweep failed")
        return 0


def _lease_until() -> datetime:
    return timezone.now() + timedelta(seconds=conf.PUSH.timeout_seconds * 4 + 10)


def _claim(config_pk: int) -> str | None:
    token = f"{WORKER}:{uuid.uuid4().hex[:8]}"
    now = timezone.now()
    taken = (
        PushConfig.objects.filter(pk=config_pk)
        .filter(Q(pump_until__isnull=True) | Q(pump_until__lt=now))
        .update(pump_owner=token, pump_until=_lease_until())
    )
    return token if taken else None


def _heartbeat(config_pk: int, token: str) -> bool:
    return bool(
        PushConfig.objects.filter(pk=config_pk, pump_owner=token).update(pump_until=_lease_until())
    )


def _release(config_pk: int, token: str) -> None:
    PushConfig.objects.filter(pk=config_pk, pump_owner=token).update(pump_owner="", pump_until=None)


def _pump(config_pk: int, token: str, deadline: float) -> Outcome:
    PushConfig.objects.filter(pk=config_pk).update(kicked_at=None)
    while True:
        config = PushConfig.objects.filter(pk=config_pk).first()  # it may change meanwhile
        if config is None or not _scan(config):
            return Outcome("gone")
        head = (
            PushDelivery.objects.filter(config_id=config_pk, status=PushDelivery.Status.PENDING)
            .order_by("event_id")
            .first()
        )
        if head is None:
            return Outcome("idle")
        if head.next_attempt_at > timezone.now():
            return Outcome("waiting", head.next_attempt_at)
        if time.monotonic() > deadline:
            return Outcome("more")
        if not _heartbeat(config_pk, token):
            # deleted since the scan (its deliveries went with it), or another job's now
            gone = not PushConfig.objects.filter(pk=config_pk).exists()
            return Outcome("gone" if gone else "lost")
        attempt(config, head, token)
        if head.status == PushDelivery.Status.PENDING:  # failed; retried later
            return Outcome("waiting", head.next_attempt_at, scheduled=True)


def _scan(config: PushConfig) -> bool:
    """Record deliveries for the config's events past `scanned_through`. False when the
    config was deleted meanwhile (nothing is recorded for it then).

    The deliveries are written under the task's row lock, the lock every change of the
    task's configs takes (a2a.push.services), with the config read again after it: a
    config deleted since the pump read it is skipped. Without it, the insert raced the
    delete — an IntegrityError at commit, for this job (a delivery pointing at a config
    gone) or for the client's delete (its cascade had not seen the new deliveries)."""
    cursor = max(config.scanned_through, config.start_after)
    while True:
        rows = list(
            TaskEvent.objects.filter(task_id=config.task_id, id__gt=cursor)
            .order_by("id")
            .annotate(role=KT("data__role"))
            .values_list("id", "kind", "role")[:SCAN_BATCH]
        )
        if not rows:
            return True
        now = timezone.now()
        cursor = rows[-1][0]
        with transaction.atomic():
            Task.objects.select_for_update().filter(pk=config.task_id).values_list("pk").first()
            if not PushConfig.objects.filter(pk=config.pk).exists():
                return False
            PushDelivery.objects.bulk_create(
                [
                    PushDelivery(
                        config=config, event_id=event_id, created_at=now, next_attempt_at=now
                    )
                    for event_id, kind, role in rows
                    if deliverable(kind, role)
                ],
                ignore_conflicts=True,
            )
            PushConfig.objects.filter(pk=config.pk, scanned_through__lt=cursor).update(
                scanned_through=cursor
            )
        config.scanned_through = cursor
        if len(rows) < SCAN_BATCH:
            return True


# --- One attempt ----------------------------------------------------------------------------


def render(config: PushConfig, event_id: int) -> dict[str, Any] | None:
    """The notification body for an event, in the config's wire version: the 0.3 stream
    item (status-update / artifact-update), or the 1.0 StreamResponse ({"statusUpdate"}…).
    None when a stream would show nothing for it."""
    items = streaming.events_after(config.task_id, event_id - 1, Dialect.RFC, limit=1)
    if not items or items[0][0] != event_id:
        return None
    item = streaming.on_the_wire(items[0][1])
    if config.version == PushConfig.Version.V10:
        from a2a.protocol import wire10

        return wire10.stream_event(item)
    return item


def headers_for(config: PushConfig, event_id: int) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Taskdeck-push/1",
        EVENT_ID_HEADER: str(event_id),
    }
    if config.auth_scheme and config.auth_credentials:
        headers["Authorization"] = f"{config.auth_scheme} {config.plain_credentials}"
    if config.token:
        headers[TOKEN_HEADER] = config.plain_token
    return headers


def backoff(attempts: int) -> float:
    base, cap = conf.PUSH.backoff_seconds, conf.PUSH.max_backoff_seconds
    return min(base * 2 ** max(attempts - 1, 0), cap)


def attempt(config: PushConfig, delivery: PushDelivery, token: str | None = None) -> None:
    """Send one delivery once and record what happened on its row (an update, never an
    insert: a config deleted meanwhile takes its log with it).

    The update is fenced: it applies only while the row is still pending with the attempt
    count this job read, and (with `token`) while this job still holds the config's lease.
    A job whose POST outlived its lease thus cannot overwrite what its successor did."""
    now = timezone.now()
    row = PushDelivery.objects.filter(
        pk=delivery.pk, status=PushDelivery.Status.PENDING, attempts=delivery.attempts
    )
    if token is not None:
        row = row.filter(config__pump_owner=token)
    body = render(config, delivery.event_id)
    if body is None:
        delivery.status = PushDelivery.Status.SKIPPED
        row.update(status=delivery.status)
        return
    delivery.attempts += 1
    delivery.last_attempt_at = now
    status: int | None = None
    error = ""
    try:
        status = post(config.url, headers_for(config, delivery.event_id), body)
    except addresses.AddressRefused as exc:
        delivery.status = PushDelivery.Status.REFUSED
        delivery.last_error = f"refused: the webhook {exc}"
        log.warning(
            "push: refused event %s for config %s: %s resolves to a non-public address",
            delivery.event_id,
            config.pk,
            redacted(config.url),
        )
    except (httpx.HTTPError, OSError, ValueError) as exc:
        error = _scrub(f"{type(exc).__name__}: {exc}", config)
    delivery.last_status_code = status
    if delivery.status == PushDelivery.Status.REFUSED:
        pass
    elif status is not None and 200 <= status < 300:
        delivery.status = PushDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.last_error = ""
        log.debug("push: event %s → config %s delivered", delivery.event_id, config.pk)
    elif delivery.attempts >= conf.PUSH.max_attempts:
        delivery.status = PushDelivery.Status.ABANDONED
        delivery.last_error = (error or f"HTTP {status}")[:500]
        log.warning(
            "push: gave up on event %s for config %s (%s) after %d attempts: %s",
            delivery.event_id,
            config.pk,
            redacted(config.url),
            delivery.attempts,
            delivery.last_error,
        )
    else:
        delivery.last_error = (error or f"HTTP {status}")[:500]
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=backoff(delivery.attempts))
        log.info(
            "push: event %s for config %s (%s) failed (attempt %d): %s",
            delivery.event_id,
            config.pk,
            redacted(config.url),
            delivery.attempts,
            delivery.last_error,
        )
    row.update(
        status=delivery.status,
        attempts=delivery.attempts,
        last_error=delivery.last_error,
        last_status_code=delivery.last_status_code,
        last_attempt_at=delivery.last_attempt_at,
        next_attempt_at=delivery.next_attempt_at,
        delivered_at=delivery.delivered_at,
    )


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS settings of every webhook call of this process: certificates checked against
    the CA bundle httpx ships (certifi), as a client made without them would. Made once:
    httpx builds a context for every client, parsing the whole bundle (20-28 ms of CPU,
    more than the rest of a delivery, plain-HTTP ones included); one context serves any
    number of connections, threads and event loops."""
    return httpx.create_ssl_context(trust_env=False)


def post(url: str, headers: dict[str, str], body: dict[str, Any]) -> int:
    """POST `body` to `url` through the address the checked resolution gave; returns the
    HTTP status. The response body is never read.

    TIMEOUT_SECONDS bounds each phase, and twice that bounds the whole attempt: httpx's
    timeouts are per socket operation, so a webhook dripping its status line a byte at a
    time would otherwise hold a worker (and the config's lease) indefinitely."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    ip = addresses.checked_address(host, port)
    pinned = f"[{ip}]" if ip.version == 6 else str(ip)
    target = urlunsplit((scheme, f"{pinned}:{port}", parts.path or "/", parts.query, ""))
    headers = {**headers, "Host": parts.netloc}
    extensions = {"sni_hostname": host} if scheme == "https" else {}
    seconds = conf.PUSH.timeout_seconds
    content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()

    async def send() -> int:
        async with (
            httpx.AsyncClient(
                timeout=httpx.Timeout(seconds),
                follow_redirects=False,
                trust_env=False,
                verify=tls(),
            ) as client,
            client.stream(
                "POST", target, content=content, headers=headers, extensions=extensions
            ) as response,
        ):
            return response.status_code

    async def bounded() -> int:
        try:
            return await asyncio.wait_for(send(), 2 * seconds)
        except TimeoutError:
            raise httpx.TimeoutException(f"no answer within {2 * seconds:g} s") from None

    return asyncio.run(bounded())


def redacted(url: str) -> str:
    """The URL for logs: no query string or fragment (they may hold secrets)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _scrub(text: str, config: PushConfig) -> str:
    for secret in (config.url, config.plain_token, config.plain_credentials):
        if secret:
            text = text.replace(secret, "…")
    return text
