"""Pacing a socket's long opening by what its server still holds unsent.

ASGI has no back-pressure: a consumer's `send` returns once the server has the message,
whether or not the client read anything. A board whose tasks needing a person overflow
its snapshot (thousands of `add` deltas and ACTIVITY_SNAPSHOTs, all sent at once) would
pile them up in the web process, and the bound on a client that does not read
(dashboard/websocket_limits.py, 4008) closes a socket whose client reads, only slower
than the loop writes. So the opening waits, between its messages, until what the server
holds for this socket is below LOW_WATER_FRACTION of that bound.

The server is the one that knows what it holds: its adapter registers a reader
(`set_reader`, done by dashboard/websocket_limits.py for Daphne); with none (another
server, the tests' in-process communicator) `drained` is one turn of the loop, as before.
It also says whether the socket is closing (`set_closing`): nothing more is worth doing
for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

LOW_WATER_FRACTION = 4  # wait until what is held is under a quarter of the bound
STALL_SECONDS = 5.0  # no progress for this long: stop waiting (the guard then decides)
POLL_SECONDS = 0.005  # the server's buffer gives no event to await: look this often

_reader: Callable[[Any], int | None] | None = None
_closing: Callable[[Any], bool] | None = None


def set_reader(reader: Callable[[Any], int | None] | None) -> None:
    """`reader(send)`: the bytes the server holds unsent for the socket whose ASGI `send`
    callable this is, or None when it cannot tell."""
    global _reader
    _reader = reader


def set_closing(check: Callable[[Any], bool] | None) -> None:
    """`check(send)`: whether the server is closing, or has closed, the socket whose ASGI
    `send` callable this is (what is sent to it is dropped)."""
    global _closing
    _closing = check


def closing(send: Any) -> bool:
    """Whether the socket behind `send` is closing or closed (False when no server adapter
    can tell): work for it is wasted, so a consumer answers nothing more."""
    check = _closing
    return check is not None and check(send)


async def drained(send: Any, bound: int) -> None:
    """Return once the socket behind `send` holds under bound / LOW_WATER_FRACTION unsent
    bytes — or once nothing moved for STALL_SECONDS (a client that stopped reading: the
    next send meets the not-reading bound, which closes it). Always one turn of the loop
    first: the transport writes to the kernel only when the loop turns."""
    await asyncio.sleep(0)
    reader = _reader
    if reader is None or closing(send):  # a closing socket drains nothing more
        return
    low = bound // LOW_WATER_FRACTION
    held = reader(send)
    if held is None or held <= low:
        return
    loop = asyncio.get_running_loop()
    stalled_at = loop.time() + STALL_SECONDS
    while held is not None and held > low:
        await asyncio.sleep(POLL_SECONDS)
        now = reader(send)
        if now is not None and now < held:
            stalled_at = loop.time() + STALL_SECONDS  # it reads: keep waiting
        elif loop.time() > stalled_at:
            return
        held = now
