"""A client that closes its connection before its body was read (wrk at the end of every
run does): Django's ASGI handler closes the request's body file while the view's thread
has yet to read it. That is the client's doing, not a server failure: the call is refused
like any unreadable request, nothing is written, and no traceback is logged as an error
(before, every such call logged "a JSON-RPC call failed" with a ValueError traceback)."""

from __future__ import annotations

import json
import logging
import tempfile

import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIRequest

from a2a.jsonrpc.views import endpoint
from a2a.models import Task
from a2a.rest.views import endpoint as rest_endpoint

BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "gone-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
}


def _abandoned(path: str, key: str, body: bytes) -> ASGIRequest:
    """A request as Django's ASGI handler leaves it once the client has gone: its body
    file closed before the view read it."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", f"Bearer {key}".encode()),
            (b"a2a-version", b"1.0"),
        ],
    }
    with tempfile.SpooledTemporaryFile() as stream:  # closed on leaving, as the handler does
        stream.write(body)
        stream.seek(0)
        request = ASGIRequest(scope, stream)
    return request


@pytest.mark.django_db(transaction=True)
def test_a_jsonrpc_call_whose_client_went_away_is_refused_without_an_error_log(api_key, caplog):
    caplog.set_level(logging.INFO)
    response = async_to_sync(endpoint)(_abandoned("/a2a/", api_key, json.dumps(BODY).encode()))
    answer = json.loads(response.content)
    assert answer["error"]["code"] == -32600
    assert "closed before the body was read" in json.dumps(answer)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not Task.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_rest_call_whose_client_went_away_is_refused_without_an_error_log(api_key, caplog):
    caplog.set_level(logging.INFO)
    body = json.dumps({"message": BODY["params"]["message"]}).encode()
    response = async_to_sync(rest_endpoint)(
        _abandoned("/a2a/rest/message:send", api_key, body), "message:send"
    )
    assert response.status_code == 400
    assert "closed before the body was read" in response.content.decode()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not Task.objects.exists()
