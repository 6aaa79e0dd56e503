"""Many streams of one task cost about what one costs (issue 31, item 2;
a2a/protocol/feed.py): the A2A streams of a task in one process (gRPC SubscribeToTask,
tasks/resubscribe, :subscribe all follow it through `stream.follow`) share one reader of
its log, which stops when the last of them ends; every stream still gets every event, in
order. Real database, real commits from another thread, as a worker's are."""

from __future__ import annotations

import asyncio
import time

import pytest
from django.db import OperationalError, connection

from a2a import services
from a2a.db_faults import InfrastructureFault
from a2a.lifecycle import Dialect, State
from a2a.protocol import feed
from a2a.protocol.stream import KEEPALIVE, StreamPlan, follow
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


async def until(predicate, seconds: float = 60) -> None:
    """Poll `predicate` until it holds (a bound for a loaded machine, not a timing)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


async def committed(change, *args, **kwargs):
    """`change(...)` on a thread of its own, as a worker's change commits; the thread's
    connection is closed after (the test database is dropped at the end)."""

    def run():
        try:
            return change(*args, **kwargs)
        finally:
            connection.close()

    return await asyncio.to_thread(run)


async def next_item(stream):
    while (got := await stream.__anext__()) == KEEPALIVE:
        pass
    return got


def test_streams_of_one_task_share_one_reader_and_each_gets_every_event(make_task, monkeypatch):
    # the streams read on the loop's executor threads: each read closes its connection
    # after it (not kept 60 s, as on PostgreSQL), so no session is left on the test
    # database when it is dropped
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # every thread's
    task = make_task("working")
    plan = StreamPlan(
        task_id=task.id, cursor=feed.newest_event_id(task.id), first=None, until_terminal=True
    )
    assert feed.Feed.running == 0

    async def main() -> None:
        streams = [follow(plan) for _ in range(40)]
        pending = [asyncio.ensure_future(next_item(s)) for s in streams]
        await until(lambda: feed.Feed.running == 1 and len(feed._feeds) == 1)
        await committed(services.pause_task, task.id, actor=CLIENT, reason="look")
        paused = await asyncio.wait_for(asyncio.gather(*pending), 60)
        assert len({event_id for event_id, _ in paused}) == 1  # the same event, for each
        assert {item["status"]["state"] for _, item in paused} == {State.PAUSED_BY_CLIENT}

        await committed(services.resume_task, task.id, actor=CLIENT)
        resumed = await asyncio.wait_for(asyncio.gather(*(next_item(s) for s in streams)), 60)
        assert {item["status"]["state"] for _, item in resumed} == {State.WORKING}
        assert resumed[0][0] > paused[0][0]
        assert feed.Feed.running == 1  # all the while, one reader

        for stream in streams[:39]:
            await stream.aclose()
        assert feed.Feed.running == 1  # one stream still follows
        await committed(services.pause_task, task.id, actor=CLIENT, reason="again")
        _, item = await asyncio.wait_for(next_item(streams[39]), 60)
        assert item["status"]["state"] == State.PAUSED_BY_CLIENT
        await streams[39].aclose()
        await until(lambda: feed.Feed.running == 0 and not feed._feeds)  # stopped

    asyncio.run(main())


def test_a_read_that_failed_in_an_outage_is_read_again_not_shared_again(make_task, monkeypatch):
    # Streams at one cursor share a read while the task's newest event stays the same; the
    # database coming back changes nothing in the log, so a failed read kept for sharing
    # would fail every retry of those streams until they ended UNAVAILABLE
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # every thread's
    task = make_task("working")
    newest = feed.newest_event_id(task.id)
    reads: list[str] = []

    async def failing():
        reads.append("failed")
        raise InfrastructureFault(OperationalError("the database is not accepting connections"))

    async def read():
        reads.append("read")
        return []

    async def main() -> None:
        async with feed.following(task.id) as news:
            await until(lambda: news.newest == newest)  # the feed polled
            with pytest.raises(InfrastructureFault):
                await news.items(failing, news.newest, Dialect.RFC)
            assert await news.items(read, news.newest, Dialect.RFC) == []  # read again
            assert await news.items(failing, news.newest, Dialect.RFC) == []  # shared now
        await until(lambda: feed.Feed.running == 0)

    asyncio.run(main())
    assert reads == ["failed", "read"]
