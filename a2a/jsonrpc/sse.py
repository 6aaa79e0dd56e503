"""The JSON-RPC binding's SSE body for a task's stream: each A2A stream item in a JSON-RPC
envelope, with its TaskEvent id as the SSE `id` (a2a.protocol.stream.follow yields them)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from a2a.protocol.stream import KEEPALIVE, REVOKED, StreamPlan, follow


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
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": error}, separators=(",", ":"))
    return f"data: {body}\n\n".encode()


async def stream(sp: StreamPlan, rpc_id: Any, *, wrap=None) -> AsyncIterator[bytes]:
    """The SSE body. `wrap` turns a 0.3 event into another wire version's (A2A 1.0)."""
    wrap = wrap or (lambda item: item)
    async with aclosing(follow(sp)) as items:  # a disconnect leaves its group now
        async for got in items:
            if got == KEEPALIVE:
                yield b": keepalive\n\n"
            elif got == REVOKED:
                yield _revoked(rpc_id)
            else:
                event_id, item = got
                yield _frame(rpc_id, wrap(item), event_id)
