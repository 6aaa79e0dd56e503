"""A refusal's words on the HTTP status line (a2a/protocol/status_line.py), on a live
Daphne: clients that show only the status line of a non-2xx answer (the official SDK's
JSON-RPC transport, `requests`' raise_for_status) show why (issue 32)."""

from __future__ import annotations

import pytest
from django.http import HttpResponse

from a2a.protocol import status_line
from dashboard import reason_phrase
from tests.conftest import local_http

pytestmark = pytest.mark.django_db(transaction=True)

SEND = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}


@pytest.fixture
def http(asgi_server):
    with local_http(base_url=asgi_server, timeout=30) as client:
        yield client


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"Authorization": "Bearer not-a-key"}, "unknown or revoked API key"),
        ({}, "an API key is required: send `Authorization: Bearer <key>`"),
    ],
    ids=["unknown-key", "no-key"],
)
def test_a_refused_key_says_why_on_the_status_line(http, headers, words):
    rpc = http.post("/a2a/", json=SEND, headers=headers)
    assert rpc.status_code == 401 and rpc.reason_phrase == words
    # the body and the challenge are as before
    assert rpc.headers["WWW-Authenticate"] == 'Bearer realm="taskdeck"'
    assert rpc.json()["error"]["data"]["detail"] == words
    rest = http.get("/a2a/rest/tasks", headers=headers)
    assert rest.status_code == 401 and rest.reason_phrase == words
    assert rest.json()["error"]["message"] == words


def test_other_answers_keep_the_usual_phrase(http, api_key):
    ok = http.post("/a2a/", json=SEND, headers={"Authorization": f"Bearer {api_key}"})
    assert ok.status_code == 200 and ok.reason_phrase == "OK"
    assert http.get("/.well-known/agent-card.json").reason_phrase == "OK"


def test_the_phrase_cannot_break_the_status_line():
    """Only visible ASCII, at most LONGEST characters: no header can be smuggled in."""
    response = status_line.say(
        HttpResponse(status=401), "bad\r\nSet-Cookie: x=1 \u00e9" + "x" * 200
    )
    assert response.reason_phrase.startswith("badSet-Cookie: x=1 x")
    assert len(response.reason_phrase) == status_line.LONGEST
    assert reason_phrase.custom(response) == response.reason_phrase
    assert reason_phrase.custom(HttpResponse(status=401)) is None
