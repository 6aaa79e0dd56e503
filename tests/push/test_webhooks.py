"""Webhooks fed by real worker processes: every transition of a paused-and-resumed task
arrives in order, in the config's wire version, with its headers; a failing webhook is
retried with backoff without losing the order; a hanging one delays nobody else.

Workers get TASKDECK_PUSH_ALLOW_PRIVATE=1 and a 0.2 s backoff (tests/runtime/conftest.py).
"""

from __future__ import annotations

import pytest
from django.db import transaction

from a2a import services
from a2a.lifecycle import Dialect
from a2a.protocol import stream as streaming
from a2a.protocol import wire10
from a2a.push import services as push
from a2a.push.models import PushDelivery
from tests.conftest import CLIENT
from tests.push.conftest import start_webhook
from tests.runtime.conftest import wait_for, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)

AUTH = {
    "0.3": lambda v: {"schemes": ["Bearer"], "credentials": f"cred-{v}"},
    "1.0": lambda v: {"scheme": "Bearer", "credentials": f"cred-{v}"},
}


def expected(task_id: str, version: str) -> list[tuple[int, dict]]:
    """What a webhook of that version must receive: the task's stream, in order."""
    items = streaming.events_after(task_id, 0, Dialect.RFC, limit=1000)
    wire = [(i, streaming.on_the_wire(item)) for i, item, _ in items]  # as a stream sends
    return [(i, wire10.stream_event(item) if version == "1.0" else item) for i, item in wire]


def settled(task_id: str, count: int) -> None:
    """Wait until `count` deliveries of the task are recorded as done (the webhook may
    have the request before the worker has recorded the answer)."""
    rows = PushDelivery.objects.filter(config__task_id=task_id).exclude(status="pending")
    wait_for(lambda: rows.count() >= count, 20, f"{count} settled deliveries")


def state_of(body: dict) -> str | None:
    status = (body.get("statusUpdate") or body).get("status")
    return status["state"] if status else None


@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_every_transition_of_a_paused_and_resumed_task_reaches_the_webhook_in_order(
    runtime, start, webhook, allow_private, version
):
    task = start("ci-wait", build=4242)
    config = {
        "url": webhook.url,
        "token": f"tok-{version}",
        "authentication": AUTH[version](version),
    }
    push.attach_inline(task.id, config, version)  # the worker may have started already
    wait_state(task.id, "paused-by-agent")
    wait_idle(task.id)
    services.pause_task(task.id, actor=CLIENT, reason="operator hold")
    services.resume_task(task.id, actor=CLIENT, continue_transcript=False)
    wait_state(task.id, "completed")
    want = expected(task.id, version)
    webhook.wait_for(lambda: len(webhook.delivered()) >= len(want), what="every event")
    hits = webhook.delivered()
    assert [(h.event_id, h.body) for h in hits] == want
    assert len(webhook.hits) == len(want)  # nothing twice, nothing failed
    settled(task.id, len(want))

    for hit in hits:
        assert hit.headers["authorization"] == f"Bearer cred-{version}"
        assert hit.headers["x-a2a-notification-token"] == f"tok-{version}"
        assert hit.headers["content-type"] == "application/json"
    states = [state_of(h.body) for h in hits]
    paused_by_agent, paused_by_client, completed = (
        ("paused-by-agent", "paused-by-client", "completed")
        if version == "0.3"
        else tuple(wire10.STATE_10[s] for s in ("paused-by-agent", "paused-by-client", "completed"))
    )
    assert states.index(paused_by_agent) < states.index(paused_by_client) < len(states) - 1
    assert states[-1] == completed
    updates = [h.body if version == "0.3" else h.body.get("statusUpdate") for h in hits]
    resumed = next(u for u in updates if u and u.get("metadata", {}).get("cause"))
    assert resumed["metadata"]["cause"] == "explicit_resume"
    assert resumed["metadata"]["previousState"] == paused_by_client
    held = updates[states.index(paused_by_client)]
    assert held["metadata"]["initiator"] == "client"
    assert held["metadata"]["handle"].startswith("suspend-")
    if version == "1.0":
        assert {next(iter(h.body)) for h in hits} == {"statusUpdate", "artifactUpdate"}
        assert all("kind" not in h.body for h in hits)
    else:
        assert {h.body["kind"] for h in hits} == {"status-update", "artifact-update"}
        assert hits[-1].body["final"] is True
    rows = PushDelivery.objects.filter(config__task_id=task.id)
    assert {(r.status, r.attempts) for r in rows} == {("delivered", 1)}


def test_a_failing_webhook_is_retried_with_backoff_and_the_order_holds(
    runtime, start, webhook, allow_private
):
    webhook.script = [500, 500]  # the first event fails twice
    with transaction.atomic():  # the config exists before the worker sees the task
        task = start("batch", items=2)
        push.set_config(task.id, push.ConfigInput(url=webhook.url, token="t"), version="1.0")
    wait_state(task.id, "completed")
    want = [i for i, _ in expected(task.id, "1.0")]
    webhook.wait_for(lambda: len(webhook.delivered()) >= len(want), what="every event")
    assert [h.event_id for h in webhook.delivered()] == want  # each once, in order
    first = webhook.hits[:3]
    assert [(h.event_id, h.status) for h in first] == [
        (want[0], 500),
        (want[0], 500),
        (want[0], 200),
    ]
    assert first[0].body == first[1].body == first[2].body
    settled(task.id, len(want))
    # 0.2 s, then 0.4 s: exponential backoff (TASKDECK_PUSH_BACKOFF_SECONDS=0.2)
    assert first[1].at - first[0].at >= 0.18
    assert first[2].at - first[1].at >= 0.38
    rows = {r.event_id: r for r in PushDelivery.objects.filter(config__task_id=task.id)}
    assert (rows[want[0]].attempts, rows[want[0]].status) == (3, "delivered")
    assert rows[want[0]].last_status_code == 200
    assert all((rows[i].attempts, rows[i].status) == (1, "delivered") for i in want[1:])


def test_a_hanging_webhook_delays_only_its_own_config(runtime, start, webhook, allow_private):
    slow, server = start_webhook()
    slow.delay = 5.0  # longer than the workers' 2 s timeout
    try:
        with transaction.atomic():
            task = start("batch", items=2)
            push.set_config(
                task.id, push.ConfigInput(url=slow.url, config_id="slow"), version="1.0"
            )
            push.set_config(
                task.id, push.ConfigInput(url=webhook.url, config_id="fast"), version="1.0"
            )
        wait_state(task.id, "completed")
        want = [i for i, _ in expected(task.id, "1.0")]
        webhook.wait_for(lambda: len(webhook.delivered()) >= len(want), 20, "the fast webhook")
        assert [h.event_id for h in webhook.delivered()] == want
        stuck = PushDelivery.objects.filter(config__config_id="slow", config__task_id=task.id)
        assert not stuck.filter(status="delivered").exists()  # all while its first try hangs
        head = stuck.order_by("event_id")
        wait_for(lambda: head.first().attempts >= 1, 15, "the slow webhook to time out")
        assert "Timeout" in head.first().last_error and head.first().status == "pending"
    finally:
        push.delete_config(task.id, "slow", actor=None)
        server.shutdown()
        server.server_close()
