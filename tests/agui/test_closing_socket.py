"""A socket the server is closing is answered nothing more (agui/consumers.py `receive`,
agui/backpressure.py `closing`): a client that stopped reading and kept asking for
resyncs had each answered with a fresh snapshot after its socket was gone, until Daphne
gave up on the consumer (tests/agui/test_socket_limits.py drives that over a real
socket; here the consumer alone, in process, with the server's answer to "closing?"
scripted)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator

from a2a import api_keys
from agui import backpressure
from agui.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


async def _opened(token: str) -> WebsocketCommunicator:
    """A socket whose opening (snapshot, then the counts) has been read."""
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"origin", b"http://127.0.0.1")]
    # the browser sockets' stack of dashboard/asgi.py, whose import would patch Daphne
    # and freeze the collector in this process
    sockets = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    ws = WebsocketCommunicator(sockets, "/ws/agui/", headers=headers)
    connected, _ = await ws.connect(timeout=30)
    assert connected
    assert (await ws.receive_json_from(timeout=30))["type"] == "STATE_SNAPSHOT"
    while (await ws.receive_json_from(timeout=30)).get("name") != "taskdeck.counts":
        pass
    return ws


def test_what_a_closing_socket_asks_is_not_answered(make_task, monkeypatch):
    make_task("working")
    _, token = api_keys.create_key("closing", ["read"])

    async def scenario() -> dict:
        ws = await _opened(token)
        answers = iter([True])  # closing when the first message arrives, open again after
        monkeypatch.setattr(backpressure, "_closing", lambda send: next(answers, False))
        try:
            await ws.send_to(text_data=json.dumps({"type": "resync"}))  # not answered
            await ws.send_to(text_data="not json")  # answered: the socket is open again
            return await ws.receive_json_from(timeout=30)
        finally:
            await ws.disconnect()

    # the first thing back answers the second message: no snapshot came before it
    assert async_to_sync(scenario)() == {"type": "error", "message": "send JSON"}
