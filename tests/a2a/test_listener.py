"""notify.Listener against a channel layer that misbehaves the way redis-py does.

Found by CI: when a client hung up while its stream waited on Redis, redis-py turned the
cancelled read into its own TimeoutError, asyncio.wait_for never retrieved it, and asyncio
logged "Task exception was never retrieved" at ERROR on the server.
"""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from a2a import notify


class RedisLikeLayer:
    """Blocks in receive; a cancelled receive ends with an error of its own, not
    CancelledError (as redis-py's read does); group calls can be made to hang."""

    def __init__(self) -> None:
        self.receiving = asyncio.Event()
        self.hang_groups = False

    async def new_channel(self) -> str:
        return "specific.test!1"

    async def group_add(self, group: str, channel: str) -> None:
        if self.hang_groups:
            await asyncio.Event().wait()

    async def group_discard(self, group: str, channel: str) -> None:
        if self.hang_groups:
            await asyncio.Event().wait()

    async def receive(self, channel: str) -> dict:
        self.receiving.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ConnectionError("Timeout reading from 127.0.0.1:6379") from None
        return {}


def _listener(layer: RedisLikeLayer) -> notify.Listener:
    listener = notify.Listener("a2a-task-x")
    listener.layer = layer
    return listener


@pytest.mark.asyncio
async def test_a_waiter_cancelled_mid_receive_leaves_nothing_unretrieved(caplog):
    layer = RedisLikeLayer()
    listener = _listener(layer)
    assert await listener.join()
    waiter = asyncio.ensure_future(listener.wait(30))
    await layer.receiving.wait()
    waiter.cancel()  # the client hung up
    with pytest.raises(asyncio.CancelledError):
        await waiter
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for _ in range(3):  # let the abandoned receive finish, then collect it
            await asyncio.sleep(0)
        gc.collect()
    assert "never retrieved" not in caplog.text


@pytest.mark.asyncio
async def test_a_hung_layer_costs_a_bounded_join_and_leave(monkeypatch):
    monkeypatch.setattr(notify, "LAYER_CALL_SECONDS", 0.05)
    layer = RedisLikeLayer()
    layer.hang_groups = True
    listener = _listener(layer)
    assert await listener.join() is False  # refused in time, retried later
    assert listener.joined is False
    await listener.leave()  # returns: a hung Redis cannot hold a stream's teardown
