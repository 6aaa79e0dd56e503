"""Operator alerts (a2a/alerts): an approval waiting too long, a failed task and the live
view lagging each make one alert, sent to a real SMTP server process and a real webhook
receiver on loopback, with the task's deep link; a delivery whose receiver is down is
retried and arrives once; /alerts shows what was sent and every try."""

from __future__ import annotations

import email
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from a2a import periodic
from a2a.alerts import delivery, detect
from a2a.alerts.models import Alert, AlertAttempt, AlertDelivery
from a2a.lifecycle import State
from a2a.models import Task
from tests.push.conftest import Webhook, _handler, start_webhook

PUBLIC = "https://taskdeck.example.com"
SINK = Path(__file__).resolve().parents[1] / "smtp_sink.py"


@pytest.fixture(scope="module")
def smtp(tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """The SMTP server: a process of its own on 127.0.0.1; (port, where messages land)."""
    into = tmp_path_factory.mktemp("smtp")
    proc = subprocess.Popen(
        [sys.executable, str(SINK), str(into)], stdout=subprocess.PIPE, text=True
    )
    port = int(proc.stdout.readline())
    yield port, into
    proc.terminate()
    proc.wait(5)


def received(into: Path) -> list[email.message.Message]:
    return [email.message_from_bytes(p.read_bytes()) for p in sorted(into.glob("*.eml"))]


@pytest.fixture
def hook() -> Iterator[Webhook]:
    found, server = start_webhook()
    yield found
    server.shutdown()
    server.server_close()


def configure(settings, *, emails=(), webhook="", private=True, **alerts: Any) -> None:
    """The channels and rules of one test; loopback webhooks allowed unless `private`
    is off (as tests/push does)."""
    settings.TASKDECK = {
        **settings.TASKDECK,
        "PUBLIC_URL": PUBLIC,
        "PUSH": {**settings.TASKDECK["PUSH"], "ALLOW_PRIVATE": private},
        "ALERTS": {
            **settings.TASKDECK["ALERTS"],
            "EMAILS": list(emails),
            "WEBHOOK": webhook,
            "BACKOFF_SECONDS": 0,
            **{k.upper(): v for k, v in alerts.items()},
        },
    }


@pytest.fixture
def mail(settings, smtp) -> Path:
    """Django's SMTP backend aimed at the sink (pytest-django swaps in locmem otherwise)."""
    port, into = smtp
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    for old in into.glob("*.eml"):
        old.unlink()
    return into


def deliver_all() -> list[str]:
    """What a worker does with the queued jobs: run each delivery's job once."""
    return [
        delivery.run(pk) for pk in AlertDelivery.objects.order_by("pk").values_list("pk", flat=True)
    ]


def later(minutes: float) -> Any:
    return timezone.now() + timedelta(minutes=minutes)


def test_the_scheduler_runs_detection():
    assert detect.tick in periodic.jobs()


def test_an_approval_waiting_too_long_reaches_email_and_webhook_once(
    settings, make_task, mail, hook
):
    configure(settings, emails=["ops@example.com", "oncall@example.com"], webhook=hook.url)
    waiting = make_task(State.INPUT_REQUIRED)
    make_task(State.WORKING)  # nobody waits for it

    assert detect.approvals(later(29)) == (0, False)  # not yet 30 minutes
    assert detect.approvals(later(31))[0] == 1
    for _ in range(3):  # later ticks see it again: still one alert
        assert detect.approvals(later(40))[0] == 0
    alert = Alert.objects.get()
    link = f"{PUBLIC}/tasks/{waiting.id}"
    assert (alert.reason, alert.task_id, alert.link) == ("approval", waiting.id, link)
    # each delivery's job was queued with the alert
    assert DBTaskResult.objects.filter(task_path="a2a.alerts.jobs.deliver_alert").count() == 2

    assert deliver_all() == ["delivered", "delivered"]
    (msg,) = received(mail)
    assert msg["To"] == "ops@example.com, oncall@example.com"
    assert msg["Subject"] == "[Taskdeck] Approval waiting"
    assert link in msg.get_payload() and waiting.id in msg.get_payload()
    (hit,) = hook.delivered()
    assert hit.headers["content-type"] == "application/json"
    assert set(hit.body) == {"text"} and link in hit.body["text"]
    assert "Approval waiting" in hit.body["text"]
    assert deliver_all() == ["done", "done"]  # a repeated job sends nothing again
    assert len(received(mail)) == 1 and len(hook.hits) == 1


def test_an_answered_question_does_not_alert(settings, make_task):
    configure(settings)
    task = make_task(State.INPUT_REQUIRED)
    from tests.conftest import answer

    answer(task, {"decision": "approve"})
    assert detect.approvals(later(31)) == (0, False)
    assert not Alert.objects.exists()


def test_a_failed_task_alerts_once_and_the_receiver_down_first_gets_it_once(settings, make_task):
    with socket.socket() as s:  # a port nobody listens on yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hook = Webhook(port=port)
    configure(settings, webhook=hook.url)
    failed = make_task(State.FAILED)
    make_task(State.COMPLETED)

    assert detect.failures(timezone.now())[0] == 1
    assert detect.failures(timezone.now())[0] == 0
    row = AlertDelivery.objects.get()
    assert delivery.run(row.pk) == "retry"  # connection refused
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)
    assert "ConnectError" in row.last_error or "refused" in row.last_error.lower()
    # the retry was queued for its time (backoff 0 here: now)
    assert DBTaskResult.objects.filter(args_kwargs__args=[row.pk]).count() == 2

    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(hook))
    server.daemon_threads = True
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert delivery.run(row.pk) == "delivered"
        assert delivery.run(row.pk) == "done"
    finally:
        server.shutdown()
        server.server_close()
    (hit,) = hook.hits
    assert f"{PUBLIC}/tasks/{failed.id}" in hit.body["text"]
    assert "Task failed" in hit.body["text"]
    tries = list(AlertAttempt.objects.filter(delivery=row).values_list("ok", flat=True))
    assert tries == [False, True]


def test_delivery_gives_up_after_max_attempts(settings, make_task):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configure(settings, webhook=f"http://127.0.0.1:{port}/down", max_attempts=2)
    make_task(State.FAILED)
    detect.failures(timezone.now())
    row = AlertDelivery.objects.get()
    assert [delivery.run(row.pk) for _ in range(3)] == ["retry", "abandoned", "done"]
    assert AlertAttempt.objects.filter(delivery=row).count() == 2


def test_the_push_ssrf_guard_refuses_a_loopback_alert_webhook(settings, make_task, hook):
    configure(settings, webhook=hook.url, private=False)
    make_task(State.FAILED)
    detect.failures(timezone.now())
    row = AlertDelivery.objects.get()
    assert delivery.run(row.pk) == "refused"
    row.refresh_from_db()
    assert row.status == "refused" and "loopback" in row.last_error
    assert hook.hits == []
    assert delivery.run(row.pk) == "done"  # never tried again


def test_a_lagging_projection_alerts_once_per_episode(settings, make_task, hold_projection, mail):
    from agui import projection

    configure(settings, emails=["ops@example.com"], lag_seconds=0.000001)
    hold_projection()
    make_task(State.WORKING)
    assert detect.lag(timezone.now()) == 1
    assert detect.lag(timezone.now()) == 0  # the same episode
    alert = Alert.objects.get(reason="lag")
    assert alert.link == f"{PUBLIC}/healthz" and alert.ended_at is None
    projection.project_due()
    assert detect.lag(timezone.now()) == 0
    alert.refresh_from_db()
    assert alert.ended_at is not None
    assert deliver_all() == ["delivered"]
    (msg,) = received(mail)
    assert msg["Subject"] == "[Taskdeck] Live view lagging"


def test_no_channel_records_the_alert_only(settings, make_task):
    configure(settings)
    make_task(State.FAILED)
    assert detect.failures(timezone.now())[0] == 1
    assert Alert.objects.count() == 1 and not AlertDelivery.objects.exists()


def test_detection_reads_an_index_range(settings, make_task):
    """ "input-required since before T" and "failed since T" are ranges of the
    (state, status_timestamp) index, not a scan of the task table."""
    qs = Task.objects.filter(
        state__in=detect.WAITING, status_timestamp__lt=timezone.now()
    ).order_by("status_timestamp", "id")[:100]
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cur:  # a tiny table would be scanned anyway
                cur.execute("SET LOCAL enable_seqscan = off")
        plan = qs.explain()
    assert "task_state_since" in plan


def test_the_alerts_page_shows_alerts_deliveries_and_tries(settings, make_task, op, view_only):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configure(settings, webhook=f"http://127.0.0.1:{port}/down")
    task = make_task(State.FAILED)
    detect.failures(timezone.now())
    deliver_all()
    for client in (op, view_only):  # read-only: viewers see it too
        page = client.get("/alerts").content.decode()
        assert "Task failed" in page and f"/tasks/{task.id}" in page
        assert 'data-status="pending"' in page and "after 1 try" in page
        assert "ConnectError" in page
    assert op.post("/alerts").status_code == 405


def test_the_alerts_page_needs_a_sign_in(client):
    assert client.get("/alerts").status_code == 302
