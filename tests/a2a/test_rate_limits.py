"""Rate limits per tenant (issue 12, item 5; issue 32): past its limit a tenant gets 429
with Retry-After on every door that creates tasks or re-subscribes, and nothing is
written; the keys of one owner share one count, operator keys are counted, dashboard users
are not. The suite turns the limits off (tests/settings.py); these tests set them."""

from __future__ import annotations

import time
import types

import pytest
from django.core.cache import cache

from a2a import api_keys, rate_limits, services
from a2a.models import Task
from tests.conftest import Rpc, local_http, start_daphne, stop_daphne, user_message

pytestmark = pytest.mark.django_db(transaction=True)
KEY = services.Actor("apikey", "busy", tenant="key:busy", restricted=True)


@pytest.fixture
def limits(settings, monkeypatch):
    """Two new tasks and one resync a minute; a fresh count. The limiter's clock stands
    still in the middle of a window (the forked servers inherit it): a test that crossed a
    window's edge would see its count start again (a flake seen in a long run)."""
    settings.TASKDECK = {**settings.TASKDECK, "RATES": {"create": 2, "resync": 1}}
    middle = (time.time() // rate_limits.WINDOW + 0.5) * rate_limits.WINDOW
    monkeypatch.setattr(rate_limits, "time", types.SimpleNamespace(time=lambda: middle))
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def limited(limits, django_db_blocker, api_key):
    """A server of its own, forked with these limits (the session's runs without)."""
    proc = start_daphne(django_db_blocker)
    with local_http(base_url=f"http://127.0.0.1:{proc.port.value}", timeout=30) as http:
        yield Rpc(http, api_key)
    stop_daphne(proc)


def send(rpc, n: int):
    body = {
        "message": {
            "role": "user",
            "messageId": f"m{n}",
            "parts": [{"kind": "text", "text": f"job {n}"}],
        }
    }
    return rpc.raw({"jsonrpc": "2.0", "id": n, "method": "message/send", "params": body})


def test_the_core_counts_per_tenant_operator_keys_too_and_not_dashboard_users(limits, unchanged):
    services.create_task(user_message("1"), actor=KEY, skill="approval")
    sibling = services.Actor("apikey", "busy-2", tenant="key:busy", restricted=True)
    services.create_task(user_message("2"), actor=sibling, skill="approval")
    with unchanged(), pytest.raises(rate_limits.RateLimited) as third:  # one count for both
        services.create_task(user_message("3"), actor=KEY, skill="approval")
    assert 1 <= third.value.retry_after <= 60
    other = services.Actor("apikey", "calm", tenant="key:calm", restricted=True)
    services.create_task(user_message("4"), actor=other, skill="approval")  # its own count
    ops_key = services.Actor("apikey", "ops", tenant="key:ops", restricted=False)
    for i in range(2):
        services.create_task(user_message(f"ops {i}"), actor=ops_key, skill="approval")
    with pytest.raises(rate_limits.RateLimited):
        services.create_task(user_message("ops 3"), actor=ops_key, skill="approval")
    operator = services.Actor("operator", "ana", tenant="user:ana")
    for i in range(5):
        services.create_task(user_message(f"op {i}"), actor=operator, skill="approval")


def test_over_http_more_keys_of_one_owner_buy_no_more_tasks(limited, unchanged):
    """The key of the `limited` server and a second key of the same owner: the second
    one's first send is the tenant's third. An operator-scope key is refused as well."""
    rpc = limited
    _, sibling = api_keys.create_key("sibling", ["read", "write"], owner="test-client")
    assert send(rpc, 1).status_code == 200
    assert send(rpc, 2).status_code == 200
    with unchanged():
        refused = rpc.raw(
            {"jsonrpc": "2.0", "id": 3, "method": "message/send",
             "params": {"message": {"role": "user", "messageId": "m3",
                                    "parts": [{"kind": "text", "text": "job 3"}]}}},
            token=sibling,
        )  # fmt: skip
    assert refused.status_code == 429 and refused.json()["error"]["code"] == -32029
    _, ops = api_keys.create_key("ops", ["read", "write", "operator"])
    answers = [send(Rpc(rpc.http, ops), n).status_code for n in (11, 12, 13)]
    assert answers == [200, 200, 429]


def test_json_rpc_answers_429_with_retry_after_and_writes_nothing(limited, unchanged):
    rpc = limited
    assert send(rpc, 1).status_code == 200
    assert send(rpc, 2).status_code == 200
    with unchanged():
        refused = send(rpc, 3)
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.json()["error"]["code"] == -32029
    assert Task.objects.count() == 2
    task_id = Task.objects.first().id
    resync = {"jsonrpc": "2.0", "id": 9, "method": "tasks/resubscribe", "params": {"id": task_id}}
    with rpc.http.stream(
        "POST", "/a2a/", json=resync, headers={"Authorization": f"Bearer {rpc.token}"}
    ) as first:
        assert first.status_code == 200  # the one resync of the minute: a stream
    again = rpc.raw(resync)
    assert again.status_code == 429 and again.json()["error"]["data"]["retryAfter"] >= 1


def test_an_agui_run_past_the_limit_is_a_run_error(limited, unchanged):
    rpc = limited
    send(rpc, 1), send(rpc, 2)
    run = {
        "threadId": "t",
        "runId": "r3",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [{"id": "u", "role": "user", "content": "3"}],
    }
    with unchanged():
        answer = rpc.http.post(
            "/agui/run", json=run, headers={"Authorization": f"Bearer {rpc.token}"}
        )
    errors = [line for line in answer.text.splitlines() if '"RUN_ERROR"' in line]
    assert len(errors) == 1 and '"rate_limited"' in errors[0]
