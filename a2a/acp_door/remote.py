"""The remote ACP door: the same `Door` served over a WebSocket at `/acp/` by the web
server, so an editor on another machine needs a URL and an API key only — no checkout, no
database or Redis settings (issue 30, item 4; docs/acp.md, "Remote").

One JSON-RPC message per WebSocket text frame (binary frames are read the same way).
This module only translates: frames in become the SDK connection's messages through the
stdio door's own guards (`GuardedTransport.receive`: -32700 / -32600 / -32602 answered,
the socket keeps serving, a frame over TASKDECK_ACP_MAX_LINE_BYTES is refused), messages
out become frames. Everything else — identity, tenancy, sessions, turns, commands — is the
`Door` the stdio mode runs, so both modes behave the same by construction.

Identity: `Authorization: Bearer <key>` in the handshake (what the relay,
a2a/acp_door/relay.py, sends from its `--key` / TASKDECK_API_KEY). A key the server
refuses is told at once: the socket is accepted and closed with 4401 and the reason
("API key refused: unknown or revoked API key"). Without the header the socket serves as
the stdio door does without TASKDECK_API_KEY: anonymous scopes if the server allows them,
else only `initialize` and `authenticate` (whose `_meta["taskdeck/apiKey"]` keeps working;
an `authenticate` without one falls back to the handshake's key, never to the server's
own environment). Socket opens count against the tenant's TASKDECK_RATE_SOCKET like
AG-UI sockets (4429 with when to retry).

The socket is outside the dashboard's cookie stack and Origin check (dashboard/asgi.py):
the door reads no cookie, so a page on another site gains nothing a key does not give.

Several web processes: each socket lives in the process that accepted it; its sessions
follow the TaskEvent log and the channel layer exactly as `manage.py acp` does, so a
change made in any process (a worker, the dashboard, another editor) reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import Any

from acp import run_agent
from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponse

from a2a import rate_limits
from a2a.acp_door.connection import Door, max_line_bytes
from a2a.acp_door.transport import GuardedTransport
from a2a.auth import Unauthenticated, authenticate

log = logging.getLogger(__name__)
db = database_sync_to_async

SOCKET_PATHS = ("/acp/", "/acp")
KEY_REFUSED = 4401  # close code of a handshake whose key the server refused (4000 + 401)
RATE_LIMITED = 4429  # as the AG-UI socket's (4000 + 429)
# Daphne's websocket_max_message_size (the default `manage.py serve` runs with): a message
# over it closes the whole socket with 1011, so none is sent (see SocketTransport.send).
SOCKET_MESSAGE_BYTES = 1024 * 1024
RELAY = Path(__file__).with_name("relay.py")


class SocketTransport(GuardedTransport):
    """The SDK connection's transport over one WebSocket. Incoming frames are queued by
    the socket's reader and screened by the stdio door's `receive` (the same guards, the
    same answers); `send` writes one text frame per message."""

    def __init__(self, send: Any, *, max_line: int) -> None:
        super().__init__(reader=None, sender=None, max_line=max_line)  # no byte stream
        self._send = send
        self._frames: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._writing = asyncio.Lock()  # one frame at a time, in the order sent
        self._closed = False

    def feed(self, frame: str | bytes | None) -> None:
        """A frame from the client; None once the socket is gone (end of input)."""
        if isinstance(frame, str):
            frame = frame.encode("utf-8")  # a text frame is valid UTF-8 (the server checked)
        self._frames.put_nowait(frame)

    async def _bounded_line(self) -> tuple[bytes | None, bool]:
        """GuardedTransport's contract: (frame, True), (None, True) at the end, or
        (b"", False) for a frame over the limit (answered -32600 by `receive`)."""
        frame = await self._frames.get()
        if frame is None:
            self._frames.put_nowait(None)  # every later read sees the end too
            return None, True
        if len(frame) > self.max_line:
            return b"", False
        return frame, True

    async def send(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, separators=(",", ":"))  # as the SDK's stdio sender
        size = len(text)  # ASCII: characters are bytes
        if size > SOCKET_MESSAGE_BYTES:
            text = json.dumps(_too_large(message, size), separators=(",", ":"))
        async with self._writing:
            if self._closed:
                raise ConnectionError("the ACP socket is closed")
            await self._send({"type": "websocket.send", "text": text})

    async def close(self) -> None:
        self._closed = True


def _too_large(message: dict[str, Any], size: int) -> dict[str, Any]:
    """What is sent in place of a message the socket cannot carry: an answer becomes an
    error answer to the same request, a session update a line saying what was left out,
    anything else (an agent → client request) is refused to its sender."""
    why = (
        f"a message of {size} bytes is over the remote door's limit of {SOCKET_MESSAGE_BYTES} "
        "bytes (the web server's WebSocket message size)"
    )
    if "id" in message and "method" not in message:
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32603, "message": "Internal error", "data": {"detail": why}},
        }
    params = message.get("params") or {}
    if message.get("method") == "session/update" and isinstance(params, dict):
        text = f"[{why}: this update was left out; the task's page on the dashboard shows it]"
        return {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": params.get("sessionId"),
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    raise ValueError(why)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class AcpSocket:
    """The ASGI application of `/acp/`: one `Door` per socket (see the module docstring)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        event = await receive()
        if event["type"] != "websocket.connect":
            return
        door = await self._door(scope, send)
        if door is None:
            return
        await send({"type": "websocket.accept"})
        transport = SocketTransport(send, max_line=max_line_bytes())
        serving = asyncio.ensure_future(run_agent(door, transport, use_unstable_protocol=True))
        reading = asyncio.ensure_future(_read(receive, transport))
        guard = asyncio.ensure_future(door.guard())
        try:
            await asyncio.wait({serving, reading}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            client_gone = reading.done() and not reading.cancelled()
            transport.feed(None)
            await transport.close()
            guard.cancel()
            await door.close()
            for task in (serving, reading):
                task.cancel()
            await asyncio.gather(serving, reading, guard, return_exceptions=True)
            if not client_gone:  # the door ended first: close the socket, not leave it open
                with contextlib.suppress(Exception):
                    await send({"type": "websocket.close", "code": 1011})
            log.info("ACP socket closed; its tasks are left as they are")

    async def _door(self, scope: dict[str, Any], send: Any) -> Door | None:
        """The socket's door with the handshake's identity, or None when the socket was
        closed (a refused key: 4401; over the tenant's socket rate: 4429), with the reason."""
        authorization = _header(scope, b"authorization")
        door = Door(opened_with="")
        try:
            door.principal = await db(authenticate)(authorization)
        except Unauthenticated as exc:
            if authorization:  # a key was sent and refused: say so now, not on every call
                await _refuse(send, KEY_REFUSED, f"API key refused: {exc}")
                return None
            # no key: as the stdio door without TASKDECK_API_KEY (authenticate still works)
        if authorization:
            door.opened_with = authorization.partition(" ")[2].strip()
        if door.principal is not None:
            try:
                await db(rate_limits.take)("socket", door.principal.actor)
            except rate_limits.RateLimited as exc:
                reason = f"rate limited: {exc.limit} opens a minute; retry in {exc.retry_after} s"
                await _refuse(send, RATE_LIMITED, reason)
                return None
        return door


async def _refuse(send: Any, code: int, reason: str) -> None:
    """Accept, then close with `code` and `reason`: a refused handshake would tell the
    client only "403", a close frame carries the words (dashboard/websocket_limits.py
    passes the reason on)."""
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": code, "reason": reason[:120]})


async def _read(receive: Any, transport: SocketTransport) -> bool:
    """Feed the client's frames to the transport until it disconnects (True)."""
    while True:
        event = await receive()
        if event["type"] == "websocket.disconnect":
            return True
        if event["type"] == "websocket.receive":
            frame = event.get("text")
            transport.feed(frame if frame is not None else event.get("bytes") or b"")


def relay_script(request: HttpRequest) -> HttpResponse:
    """GET /acp/relay.py: the editor's side of the remote door, one file with its
    dependencies declared inline (PEP 723), so `uv run <this URL> --server …` runs it."""
    response = HttpResponse(RELAY.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="taskdeck-acp.py"'
    return response
