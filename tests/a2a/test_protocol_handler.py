"""The A2A endpoint's own handler (dashboard/protocol_handler.py) keeps what Django's
handler gives every request, while sending its signals inline and deciding the answer in
one thread: driven here through the real ASGI application, as a server drives it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core import signals

from a2a import api_keys
from dashboard.protocol_handler import ProtocolHandler

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

# What dashboard.asgi routes POST /a2a/ to.
application = ProtocolHandler()


class Exchange:
    """One HTTP request through the ASGI app: the client's side of it."""

    def __init__(self, body: dict[str, Any] | None, token: str | None, method: str = "POST"):
        raw = json.dumps(body).encode() if body is not None else b""
        headers = [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"a2a-version", b"1.0"),
            (b"content-length", str(len(raw)).encode()),
        ]
        if token:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": "/a2a/", "raw_path": b"/a2a/",
            "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
        }  # fmt: skip
        self.raw = raw
        self.hang_up = asyncio.Event()
        self.sent: asyncio.Queue[dict] = asyncio.Queue()
        self.body_sent = False

    async def receive(self) -> dict:
        if not self.body_sent:
            self.body_sent = True
            return {"type": "http.request", "body": self.raw, "more_body": False}
        await self.hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        await self.sent.put(message)

    def run(self) -> asyncio.Task:
        return asyncio.ensure_future(application(self.scope, self.receive, self.send))

    async def answer(self) -> tuple[int, dict]:
        await asyncio.wait_for(self.run(), timeout=30)
        start = self.sent.get_nowait()
        body = b""
        while not self.sent.empty():
            body += self.sent.get_nowait().get("body", b"")
        return start["status"], json.loads(body)


@pytest.fixture
def token(transactional_db) -> str:
    _, raw = api_keys.create_key("handler", ["read", "write"])
    return raw


@pytest.fixture
def heard() -> list[str]:
    """The request signals as receivers see them."""
    got: list[str] = []

    def started(sender, **kwargs):
        got.append("started" if kwargs.get("scope", {}).get("path") == "/a2a/" else "?")

    def finished(sender, **kwargs):
        got.append("finished")

    signals.request_started.connect(started, dispatch_uid="test-started")
    signals.request_finished.connect(finished, dispatch_uid="test-finished")
    yield got
    signals.request_started.disconnect(dispatch_uid="test-started")
    signals.request_finished.disconnect(dispatch_uid="test-finished")


async def test_each_call_still_sends_request_started_and_finished_once(token, heard):
    call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
    status, body = await Exchange(call, token).answer()
    assert status == 200 and body["error"]["code"] == -32001  # answered, not found
    assert heard == ["started", "finished"]


async def test_refusals_before_the_handler_are_answered_in_the_same_single_thread(token, heard):
    call = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "x"}}
    status, body = await Exchange(call, None).answer()
    assert status == 401 and body["error"]["code"] == -32600
    status, body = await Exchange({"jsonrpc": "2.0", "id": 8, "method": "Nope"}, token).answer()
    assert (status, body["id"], body["error"]["code"]) == (200, 8, -32601)
    status, body = await Exchange(None, token, method="GET").answer()
    assert status == 405 and "POST" in body["detail"]
    assert heard == ["started", "finished"] * 3


async def test_a_client_that_hangs_up_ends_its_stream(token, make_task):
    # thread_sensitive=False: asgiref's one "main thread" executor, once started here,
    # would be inherited by the live servers later tests fork from this process, without
    # its thread (their own thread-sensitive calls would then wait for ever)
    make = sync_to_async(make_task, thread_sensitive=False)
    task = await make("working")  # stays working: no worker here
    call = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task.id}}
    exchange = Exchange(call, token)
    served = exchange.run()
    start = await asyncio.wait_for(exchange.sent.get(), timeout=30)
    assert start["status"] == 200
    first = await asyncio.wait_for(exchange.sent.get(), timeout=30)
    assert b'"id"' in first["body"]  # the task snapshot, then the stream waits for changes
    exchange.hang_up.set()
    await asyncio.wait_for(served, timeout=30)  # the view was cancelled, the stream closed
