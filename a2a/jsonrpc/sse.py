"""The JSON-RPC binding's SSE body for a task's stream: each A2A stream item in a JSON-RPC
envelope, with its TaskEvent id as the SSE `id` (a2a.protocol.stream.follow yields them).

The body always ends: after the item that ends the stream, or with a JSON-RPC error frame
(a revoked key: -32600; the database unreachable past TASKDECK_STREAM_OUTAGE_SECONDS, or
any failure while following: -32603), never by leaving the connection open and silent."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from a2a.protocol.errors import INTERNAL_ERROR, ProtocolError, unavailable
from a2a.protocol.stream import KEEPALIVE, REVOKED, UNAVAILABLE, StreamPlan, follow

log = logging.getLogger(__name__)


def _frame(rpc_id: Any, result: dict[str, Any], event_id: int | None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}, separators=(",", ":"))
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {body}\n\n".encode()


def _revoked(rpc_id: Any) -> bytes:
    error = {
        "code": -32600,
        "message": "Invalid request",
        "data": {"detail": "the API key was revoked; the stream ends"},
    }
    return _error_frame(rpc_id, error)


def _error_frame(rpc_id: Any, error: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": error}, separators=(",", ":"))
    return f"data: {body}\n\n".encode()


async def stream(
    sp: StreamPlan, rpc_id: Any, *, wrap=None, version: str = "0.3"
) -> AsyncIterator[bytes]:
    """The SSE body. `wrap` turns a 0.3 event into another wire version's (A2A 1.0), whose
    errors `version` says how to write."""
    wrap = wrap or (lambda item: item)
    try:
        async with aclosing(follow(sp)) as items:  # a disconnect leaves its group now
            async for got in items:
                if got == KEEPALIVE:
                    yield b": keepalive\n\n"
                elif got == REVOKED:
                    yield _revoked(rpc_id)
                elif got == UNAVAILABLE:
                    yield _error_frame(rpc_id, unavailable().as_dict(version))
                else:
                    event_id, item = got
                    yield _frame(rpc_id, wrap(item), event_id)
    except Exception:
        log.exception("the stream of task %s failed", sp.task_id)
        failed = ProtocolError(INTERNAL_ERROR, "the stream failed; reconnect with its last id")
        yield _error_frame(rpc_id, failed.as_dict(version))
