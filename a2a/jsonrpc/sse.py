"""The JSON-RPC binding's SSE body for a task's stream: each A2A stream item in a JSON-RPC
envelope, with its TaskEvent id as the SSE `id`, then live items as the task changes.

Waking up: a `Listener` on the task's group (a2a.notify) ends each wait early; otherwise
the log is polled every STREAM_POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from a2a.auth import revalidate_seconds, still_valid
from a2a.lifecycle import Dialect
from a2a.notify import Listener, group_name
from a2a.protocol.stream import StreamPlan, events_after, on_the_wire, view_state

KEEPALIVE_SECONDS = 15.0


def _frame(rpc_id: Any, result: dict[str, Any], event_id: int | None) -> bytes:
    result = on_the_wire(result)
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


async def stream(
    sp: StreamPlan, rpc_id: Any, dialect: Dialect, *, wrap=None
) -> AsyncIterator[bytes]:
    """The SSE body. `wrap` turns a 0.3 event into another wire version's (A2A 1.0)."""
    wrap = wrap or (lambda item: item)
    poll = float(settings.TASKDECK.get("STREAM_POLL_SECONDS", 0.25))
    news = Listener(group_name(sp.task_id))
    fetch = database_sync_to_async(events_after, thread_sensitive=False)
    loop = asyncio.get_running_loop()
    cursor = sp.cursor
    caller, every = sp.visible_to, revalidate_seconds()
    check_at = loop.time() + every
    valid = database_sync_to_async(still_valid, thread_sensitive=False)
    try:
        await news.join()
        if sp.first is not None:
            yield _frame(rpc_id, wrap(sp.first), cursor)
            if sp.ends_at(view_state(sp.first)):
                return
        idle = 0.0
        while True:
            if caller is not None and loop.time() >= check_at:
                check_at = loop.time() + every
                if not await valid(caller):  # revoked while streaming: the stream ends
                    yield _revoked(rpc_id)
                    return
            batch = await fetch(sp.task_id, cursor, dialect)
            for event_id, item, _ in batch:
                cursor = event_id
                ends = item.get("kind") == "status-update" and sp.ends_at(item["_state"])
                if "final" in item:
                    item = {**item, "final": ends}
                yield _frame(rpc_id, wrap(item), event_id)
                if ends:
                    return
            if batch:
                idle = 0.0
                continue
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield b": keepalive\n\n"
            started = loop.time()
            await news.wait(poll)
            idle += loop.time() - started
    finally:
        await news.leave()
