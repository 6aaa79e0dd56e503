"""Revoking a key, or signing out, ends what it opened (issue 12, finding 3; a session's
AG-UI run since issue 32): an SSE stream, an AG-UI run, a WebSocket — within
TASKDECK_REVALIDATE_SECONDS (0.5 s in the tests, 5 s by default). Each test reads until
the thing ends; the client's timeout is the bound."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from a2a import api_keys, services
from tests.conftest import local_http, user_message

pytestmark = pytest.mark.django_db(transaction=True)
BOUND = 10  # seconds a client waits at most; the server's bound is 0.5 s (+ a poll)


@pytest.fixture
def key(transactional_db):
    return api_keys.create_key("doomed", ["read", "write"])[1]


def mine() -> str:
    actor = services.Actor("apikey", "doomed", tenant="key:doomed", restricted=True)
    return services.create_task(user_message("long job"), actor=actor, skill="approval").id


def revoked_midway(server: str, key: str, path: str, body: dict, opened) -> list[dict]:
    """The SSE frames of a stream, revoking the key after its first frame (`opened` checks
    it is the one that opens the stream);
    returns when the server ends the stream (the client's timeout is the bound)."""
    frames: list[dict] = []
    with (
        local_http(base_url=server, timeout=BOUND) as http,
        http.stream("POST", path, json=body, headers={"Authorization": f"Bearer {key}"}) as r,
    ):
        for line in r.iter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
                if len(frames) == 1:
                    assert opened(frames[0]), frames[0]
                    assert api_keys.revoke("doomed")  # the stream is open: revoke now
    return frames


def test_a_revoked_keys_stream_ends(asgi_server, key):
    task_id = mine()
    body = {"jsonrpc": "2.0", "id": 9, "method": "tasks/resubscribe", "params": {"id": task_id}}
    frames = revoked_midway(asgi_server, key, "/a2a/", body, lambda f: "result" in f)
    assert frames[0]["result"]["id"] == task_id
    assert frames[-1]["error"]["data"]["detail"] == "the API key was revoked; the stream ends"


def test_a_revoked_keys_agui_run_ends_with_run_error(asgi_server, key):
    run = {
        "threadId": "t-doomed",
        "runId": "r-doomed",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "Roll out"}],
    }
    events = revoked_midway(
        asgi_server, key, "/agui/run", run, lambda e: e["type"] == "RUN_STARTED"
    )
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1] == {**events[-1], "type": "RUN_ERROR", "code": "revoked"}


def test_signing_out_ends_the_sessions_agui_run(asgi_server, operator):
    """A dashboard user's run (session cookie + CSRF, no key) ends with RUN_ERROR once
    that session signs out (issue 32: it streamed on for 18 s, `still_valid` was True for
    every principal but a key)."""
    browser = Client()
    browser.force_login(operator)
    csrf = "k" * 32
    cookies = {"sessionid": browser.cookies["sessionid"].value, "csrftoken": csrf}
    run = {
        "threadId": "t-session", "runId": "r-session", "state": {}, "tools": [],
        "context": [], "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "Roll out"}],
    }  # fmt: skip
    events: list[dict] = []
    with (
        local_http(base_url=asgi_server, timeout=BOUND, cookies=cookies) as http,
        http.stream("POST", "/agui/run", json=run, headers={"X-CSRFToken": csrf}) as r,
    ):
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if len(events) == 1:
                    assert events[0]["type"] == "RUN_STARTED"
                    browser.post("/logout/")  # the session is gone from the store
    assert events[-1] == {
        **events[-1], "type": "RUN_ERROR", "code": "revoked",
        "message": "the session has ended",
    }  # fmt: skip
    assert [e["type"] for e in events].count("RUN_ERROR") == 1


def test_an_unrelated_sign_out_leaves_a_sessions_run_alone(operator):
    """Another session of the same user signing out ends only its own runs: the check
    is by the session the run was opened with."""
    from a2a.auth import still_valid

    mine, other = Client(), Client()
    mine.force_login(operator)
    other.force_login(operator)
    actor = services.Actor("operator", "ana", tenant="user:ana")
    key = mine.cookies["sessionid"].value
    other.post("/logout/")
    assert still_valid(actor, key)
    mine.post("/logout/")
    assert not still_valid(actor, key)


def ws_url(asgi_server: str) -> str:
    return asgi_server.replace("http://", "ws://") + "/ws/agui/"


def closed_with(ws) -> int:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=BOUND)
    return closed.value.rcvd.code


def test_a_revoked_keys_socket_is_closed(asgi_server, key):
    headers = {"Authorization": f"Bearer {key}", "Origin": "http://127.0.0.1"}
    with connect(ws_url(asgi_server), additional_headers=headers) as ws:
        assert json.loads(ws.recv(timeout=BOUND))["type"] == "STATE_SNAPSHOT"
        assert api_keys.revoke("doomed")
        assert closed_with(ws) == 4401


def test_revoking_a_key_closes_each_of_its_sockets_and_no_other(asgi_server, key):
    """The server checks once per key for all its sockets (agui.consumers.Guards): every
    socket of the revoked key is closed, another key's socket carries on."""
    _, other = api_keys.create_key("spared", ["read"])
    url, origin = ws_url(asgi_server), {"Origin": "http://127.0.0.1"}
    with (
        connect(url, additional_headers={**origin, "Authorization": f"Bearer {key}"}) as one,
        connect(url, additional_headers={**origin, "Authorization": f"Bearer {key}"}) as two,
        connect(url, additional_headers={**origin, "Authorization": f"Bearer {other}"}) as kept,
    ):
        for ws in (one, two, kept):
            assert json.loads(ws.recv(timeout=BOUND))["type"] == "STATE_SNAPSHOT"
        assert api_keys.revoke("doomed")
        assert closed_with(one) == 4401
        assert closed_with(two) == 4401
        kept.send(json.dumps({"type": "resync"}))  # still served, after the closes
        event = json.loads(kept.recv(timeout=BOUND))
        while event["type"] != "STATE_SNAPSHOT":
            event = json.loads(kept.recv(timeout=BOUND))


def test_signing_out_closes_the_dashboards_socket(asgi_server, operator):
    browser = Client()
    browser.force_login(operator)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    headers = {"Cookie": cookie, "Origin": "http://127.0.0.1"}
    with connect(ws_url(asgi_server), additional_headers=headers) as ws:
        assert json.loads(ws.recv(timeout=BOUND))["type"] == "STATE_SNAPSHOT"
        browser.post("/logout/")  # the session is gone from the store
        assert closed_with(ws) == 4401


def test_an_idle_expired_session_closes_the_dashboards_socket(asgi_server, operator):
    from datetime import timedelta

    from django.contrib.sessions.models import Session
    from django.utils import timezone

    browser = Client()
    browser.force_login(operator)
    key = browser.cookies["sessionid"].value
    headers = {"Cookie": f"sessionid={key}", "Origin": "http://127.0.0.1"}
    with connect(ws_url(asgi_server), additional_headers=headers) as ws:
        assert json.loads(ws.recv(timeout=BOUND))["type"] == "STATE_SNAPSHOT"
        # the idle timeout passes (TASKDECK_SESSION_IDLE_MINUTES) without a request
        Session.objects.filter(session_key=key).update(
            expire_date=timezone.now() - timedelta(seconds=1)
        )
        assert closed_with(ws) == 4401
