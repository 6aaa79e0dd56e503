"""Delivery run in this process (no workers), against a real webhook on 127.0.0.1: what an
inline config is owed, refusals at delivery time, redirects, giving up, the sweep, logs.

These drive tasks by hand, so they run before the suites that start agent workers."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.errors import ValidationFailed
from a2a.lifecycle import Dialect
from a2a.protocol import stream as streaming
from a2a.protocol import wire10
from a2a.push import delivery
from a2a.push import services as push
from a2a.push.models import PushConfig, PushDelivery
from tests.conftest import AGENT, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def quick(settings, allow_private) -> None:
    settings.TASKDECK["PUSH"].update(BACKOFF_SECONDS=0.05, MAX_ATTEMPTS=3, TIMEOUT_SECONDS=2)


def drain(config_pk: int, timeout: float = 10.0) -> None:
    """Run the delivery job here until the config has nothing left to send."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if delivery.run(config_pk) in ("idle", "gone"):
            return
        time.sleep(0.02)
    raise AssertionError("deliveries did not settle")


def stream_items(task_id: str, after: int = 0) -> list[tuple[int, dict]]:
    items = streaming.events_after(task_id, after, Dialect.RFC)
    return [(i, streaming.on_the_wire(item)) for i, item, _ in items]


def test_an_inline_config_gets_the_events_committed_before_it(quick, make_task, webhook):
    task = make_task("working")  # a fast worker started it before the config was stored
    config = push.attach_inline(
        task.id,
        {
            "url": webhook.url,
            "token": "tok-1",
            "authentication": {"scheme": "Bearer", "credentials": "cred-1"},
        },
        "1.0",
    )
    drain(config.pk)
    [(event_id, item)] = stream_items(task.id)
    [hit] = webhook.delivered()
    assert hit.body == wire10.stream_event(item)
    assert hit.body["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert hit.headers["authorization"] == "Bearer cred-1"
    assert hit.headers["x-a2a-notification-token"] == "tok-1"
    assert hit.headers["content-type"] == "application/json"
    assert hit.event_id == event_id and hit.path == "/hook"


def test_an_inline_config_on_an_answer_starts_from_that_answer(quick, make_task, webhook):
    task = make_task("input-required")
    answer = {
        "kind": "data",
        "data": {
            "type": "a2a.input.response",
            "requestId": f"req-{task.id}-1",
            "values": {"decision": "approve"},
        },
    }
    message = services.IncomingMessage(message_id="answer-1", parts=[answer])
    services.add_message(task.id, message, actor=CLIENT)
    config = push.attach_inline(task.id, {"url": webhook.url}, "0.3")
    drain(config.pk)
    assert [h.body for h in webhook.delivered()] == [stream_items(task.id)[-1][1]]
    assert webhook.delivered()[0].body["status"]["state"] == "working"
    assert webhook.delivered()[0].body["kind"] == "status-update"
    assert "authorization" not in webhook.delivered()[0].headers
    assert "_state" not in webhook.delivered()[0].body  # internal, never sent


def test_inline_configs_are_validated_under_configuration(make_task, forbid_private, unchanged):
    task = make_task("working")
    cases = [
        ({"url": "http://127.0.0.1/x"}, "0.3", "configuration.pushNotificationConfig.url"),
        ("https://example.com", "0.3", "configuration.pushNotificationConfig"),
        (
            {"url": "https://example.com", "authentication": {"credentials": "x"}},
            "1.0",
            "configuration.taskPushNotificationConfig.authentication.scheme",
        ),
        (
            {"url": "https://example.com", "taskId": "another-task"},
            "1.0",
            "configuration.taskPushNotificationConfig.taskId",
        ),
    ]
    for config, version, path in cases:
        with unchanged(), pytest.raises(ValidationFailed) as caught:
            push.attach_inline(task.id, config, version)
        assert path in caught.value.errors, caught.value.errors


def test_a_name_resolving_inward_is_refused_when_delivering(make_task, webhook, forbid_private):
    """Names are not resolved when a config is made; at delivery every address is checked.
    (The row is written directly: `localhost` itself is already refused at creation.)"""
    task = make_task("working")
    now = timezone.now()
    config = PushConfig.objects.create(
        task=task,
        config_id="inward",
        url=f"http://localhost:{webhook.port}/hook",
        version="1.0",
        created_at=now,
        updated_at=now,
    )
    drain(config.pk)
    [row] = PushDelivery.objects.filter(config=config)
    assert row.status == PushDelivery.Status.REFUSED and row.attempts == 1
    assert "refused" in row.last_error
    assert webhook.hits == []


def test_redirects_are_not_followed(quick, make_task, webhook):
    webhook.script = [302]
    task = make_task("working")
    config = push.attach_inline(task.id, {"url": webhook.url}, "1.0")
    assert delivery.run(config.pk) == "waiting"
    row = PushDelivery.objects.get(config=config)
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, 302)
    assert [h.path for h in webhook.hits] == ["/hook"]  # not /elsewhere
    time.sleep(0.1)
    drain(config.pk)
    assert [(h.path, h.status) for h in webhook.hits] == [("/hook", 302), ("/hook", 200)]


def test_an_event_that_fails_every_attempt_is_abandoned_and_the_next_one_goes(
    quick, make_task, webhook
):
    webhook.script = [500, 503, 500]
    task = make_task("working")
    config = push.attach_inline(task.id, {"url": webhook.url}, "1.0")
    services.emit_text(task.id, "still working", actor=AGENT)
    drain(config.pk)
    first, second = (i for i, _ in stream_items(task.id))
    assert [(h.event_id, h.status) for h in webhook.hits] == [
        (first, 500),
        (first, 503),
        (first, 500),
        (second, 200),
    ]
    rows = {r.event_id: r for r in PushDelivery.objects.filter(config=config)}
    assert (rows[first].status, rows[first].attempts) == ("abandoned", 3)
    assert rows[first].last_error == "HTTP 500"
    assert (rows[second].status, rows[second].attempts) == ("delivered", 1)


def test_the_subscriber_records_what_each_config_is_owed(quick, make_task, webhook):
    task = make_task("working")
    config = push.set_config(task.id, push.ConfigInput(url=webhook.url), version="0.3")
    drain(config.pk)
    assert PushDelivery.objects.filter(config=config).count() == 0  # owed nothing yet
    services.report_progress(task.id, 1, 2, actor=AGENT)  # not a stream event: owed nothing
    message = services.emit_text(task.id, "half way", actor=AGENT)
    [row] = PushDelivery.objects.filter(config=config)
    assert row.status == "pending" and row.attempts == 0
    assert row.event.data["messageSeq"] == message.seq
    assert PushConfig.objects.get(pk=config.pk).kicked_at is not None  # a job is queued
    drain(config.pk)
    [hit] = webhook.delivered()
    assert hit.body["status"]["message"]["parts"] == [{"kind": "text", "text": "half way"}]


def test_the_sweep_requeues_deliveries_whose_job_was_lost(quick, make_task, webhook):
    task = make_task("working")
    config = push.attach_inline(task.id, {"url": webhook.url}, "1.0")
    long_ago = timezone.now() - timedelta(minutes=5)
    delivery._scan(config)
    PushDelivery.objects.filter(config=config).update(next_attempt_at=long_ago)
    PushConfig.objects.filter(pk=config.pk).update(kicked_at=None)
    DBTaskResult.objects.all().delete()
    assert delivery.sweep() == 1
    [job] = DBTaskResult.objects.all()
    assert job.task_path.endswith("deliver_push") and job.args_kwargs["args"] == [config.pk]
    assert delivery.sweep() == 0  # kicked: the queued job will do it


def test_secrets_stay_out_of_logs_and_errors(quick, make_task, webhook, caplog):
    webhook.script = [500, 500, 500]
    task = make_task("working")
    config = push.attach_inline(
        task.id,
        {
            "url": f"{webhook.url}?key=q-secret",
            "token": "t-secret",
            "authentication": {"scheme": "Bearer", "credentials": "c-secret"},
        },
        "1.0",
    )
    with caplog.at_level(logging.DEBUG, logger="a2a"):
        drain(config.pk)
    assert "gave up" in caplog.text and f"127.0.0.1:{webhook.port}/hook" in caplog.text
    row = PushDelivery.objects.get(config=config)
    for secret in ("q-secret", "t-secret", "c-secret"):
        assert secret not in caplog.text
        assert secret not in row.last_error
    assert webhook.hits[0].headers["authorization"] == "Bearer c-secret"
    assert webhook.hits[0].path == "/hook?key=q-secret"
