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
from django.utils.module_loading import import_string
from redis.exceptions import ConnectionError as RedisConnectionError

from a2a import notify
from dashboard.log_filters import RedisOutage
from dashboard.settings import redis_channel_layers


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


@pytest.mark.asyncio
async def test_news_between_two_waits_wakes_the_next_one_on_the_redis_layer(our_redis):
    """The pub/sub layer keeps nothing for a channel nobody receives on, and a cancelled
    receive there drops the channel: a Listener keeps its receive pending across a wait
    that timed out, so news that arrives between two waits (while its waiter re-reads the
    database) wakes the next wait instead of being lost until the poll."""
    config = redis_channel_layers(our_redis.url)["default"]
    layer = import_string(config["BACKEND"])(**config["CONFIG"])
    waiter, witness = notify.Listener("a2a-task-x"), notify.Listener("a2a-task-x")
    waiter.layer = witness.layer = layer
    try:
        assert await waiter.join() and await witness.join()
        assert await waiter.wait(0.05) is False  # nothing yet: its caller re-reads
        await layer.group_send("a2a-task-x", {"type": "task.event", "id": 1})
        # the layer hands a group's news to all its channels at once: once the witness
        # has it, so has (or has not) the waiter, which is between two waits
        assert await witness.wait(10) is True
        assert await waiter.wait(0.5) is True
    finally:
        await waiter.leave()
        await witness.leave()
        await layer.flush()


def _record(exc: BaseException) -> logging.LogRecord:
    message = "Unexpected exception in receive task"  # what channels_redis logs
    return logging.LogRecord(
        "channels_redis.pubsub", logging.ERROR, __file__, 1, message, None, (type(exc), exc, None)
    )


def test_a_lost_redis_subscription_is_logged_as_one_warning_line():
    record = _record(RedisConnectionError("Error 111 connecting to 127.0.0.1:6379."))
    assert RedisOutage().filter(record)
    assert (record.levelname, record.exc_info) == ("WARNING", None)
    assert "lost its Redis subscription" in record.getMessage()
    assert "Error 111" in record.getMessage()
    # anything else the library logs stays an error, with its traceback
    bug = _record(KeyError("channel"))
    assert RedisOutage().filter(bug)
    assert bug.levelname == "ERROR" and bug.exc_info is not None
