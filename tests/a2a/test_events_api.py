"""POST /api/events: authenticated, validated, and it wakes only what it should."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from a2a import api_keys, services
from a2a.conditions import parse_conditions
from a2a.models import ExternalEvent
from tests.conftest import AGENT, local_http

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def http(asgi_server):
    with local_http(base_url=asgi_server, timeout=30) as client:
        yield client


def post(http, body, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return http.post("/api/events", json=body, headers=headers)


def parked(make_task, conditions: dict):
    task = make_task("working")
    services.park_task(task.id, actor=AGENT, reason="wait", conditions=parse_conditions(conditions))
    return task


def test_an_event_wakes_its_sleepers_and_is_recorded(http, api_key, make_task):
    waiting = parked(make_task, {"onEvent": "deploy.done"})
    other = parked(make_task, {"onEvent": "deploy.started"})
    response = post(http, {"name": "deploy.done", "payload": {"env": "prod"}}, api_key)
    assert response.status_code == 201
    assert [w["taskId"] for w in response.json()["woke"]] == [waiting.id]
    waiting.refresh_from_db(), other.refresh_from_db()
    assert (waiting.state, other.state) == ("working", "paused-by-agent")
    susp = waiting.suspensions.get()
    assert susp.cause == "external_event"
    assert susp.resume_input == {"event": "deploy.done", "payload": {"env": "prod"}}
    event = ExternalEvent.objects.get()
    assert event.sent_by == "apikey:test-client" and event.woke[0]["taskId"] == waiting.id


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "has spaces"}, "name"),
        ({"name": 7}, "name"),
        ({"name": "ok", "payload": [1, 2]}, "payload"),
        ({"name": "x" * 201}, "name"),
    ],
)
def test_bad_events_are_refused_and_change_nothing(
    http, api_key, make_task, unchanged, body, field
):
    parked(make_task, {"onEvent": "ok"})
    with unchanged():
        response = post(http, body, api_key)
    assert response.status_code == 400 and field in response.json()
    assert not ExternalEvent.objects.exists()


def test_events_need_a_key_with_write_scope(http, make_task, unchanged):
    parked(make_task, {"onEvent": "ok"})
    _, reader = api_keys.create_key("reader", ["read"], owner="test-client")
    with unchanged():
        anonymous = post(http, {"name": "ok"})
        read_only = post(http, {"name": "ok"}, reader)
        bad = post(http, {"name": "ok"}, "td_nope_nope")
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"].startswith(
        "Bearer"
    )
    assert read_only.status_code == 403 and bad.status_code == 401
    assert not ExternalEvent.objects.exists()


def test_emit_event_command(make_task):
    task = parked(make_task, {"trigger": {"event": "ci.status", "match": {"build": 7}}})
    call_command("emit_event", "ci.status", "--payload", '{"build": 8}', stdout=(out := StringIO()))
    assert "woke nothing" in out.getvalue()
    call_command("emit_event", "ci.status", "--payload", '{"build": 7}', stdout=(out := StringIO()))
    assert task.id in out.getvalue()
    with pytest.raises(CommandError, match="JSON"):
        call_command("emit_event", "ci.status", "--payload", "{nope", stdout=StringIO())
    with pytest.raises(CommandError, match="object"):
        call_command("emit_event", "ci.status", "--payload", "[1]", stdout=StringIO())
