"""One reader of a task's log per process, however many streams follow the task (issue 31).

Every A2A stream of a task (`tasks/resubscribe`, `:subscribe`, gRPC `SubscribeToTask`,
`message/stream`: `a2a.protocol.stream.follow`) used to poll the task's log on its own
every TASKDECK_STREAM_POLL_SECONDS and hold its own Listener: 120 `SubscribeToTask` streams
of one task were 480 queries a second, and GetTask went from 11 to 304 ms median. Now the
streams of a task share a `Feed` per process (per event loop): one Listener on the task's
group, and one query per poll — the id of the task's newest event (the `event_task_id`
index). A stream reads the events after its cursor only when that id passed what it last
checked, and streams at the same cursor in the same dialect share that read (`items`): N
streams cost one small query per poll and one read per change, about what one costs.

Why the newest id is enough: a task's events are appended under its row lock, so their
ids grow in commit order (stream.py). A stream notes the newest id the feed knew *before*
it reads (`newest`); any event committed after that read has a larger id, which the feed
reads at its next poll (or at once, woken by the Listener), and the stream reads again.

A stream follows the feed only once this process's inline run of the task is over
(stream.py: it waits for the run itself meanwhile), so a streaming send whose run ends
its turn never starts one.

A failed poll (the database away: a2a.db_faults) wakes the feed's streams once; each then
reads from its own cursor, and a read that fails too is an outage the stream waits out by
itself (retries from its cursor, keep-alives, UNAVAILABLE past
TASKDECK_STREAM_OUTAGE_SECONDS: stream.py), while the feed goes on polling. A shared read
that failed is not shared again: a retry reads anew. Any other error of the poll is raised
to every stream waiting, which ends with an error frame.

The feed starts with its first follower (synchronously, no await in between: two streams
opening together share one) and stops when its last follower leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async

from a2a import conf
from a2a.db_faults import InfrastructureFault, guarded
from a2a.models import TaskEvent
from a2a.notify import Listener, group_name

log = logging.getLogger(__name__)


def newest_event_id(task_id: str) -> int:
    """The id of the task's newest event (0: none)."""
    found = TaskEvent.objects.filter(task_id=task_id).order_by("-id").values_list("id", flat=True)
    return found.first() or 0


class Feed:
    running = 0  # feeds reading in this process (tests read it)

    def __init__(self, task_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self.task_id, self.loop = task_id, loop
        self.followers = 0
        self.newest = 0  # the task's newest event id, as last read
        self.changed = asyncio.Event()  # set and replaced when `newest` grows or a poll fails
        self.poke = asyncio.Event()  # wakes the reader (a follower left, or news)
        self.reads: dict[tuple[int, Any, int], asyncio.Future] = {}  # shared `items`
        self.failure: Exception | None = None  # the last poll's error, until one succeeds
        self.task = loop.create_task(self._run())

    async def wait(self, checked: int, timeout: float) -> None:
        """Until the newest id passed `checked`, the feed's poll failed, or `timeout`
        seconds. A failed poll is in `failure`: an InfrastructureFault (the database is
        away) for the stream to find with its own read and wait out; any other error is
        raised here, for the stream to end with an error frame."""
        self._raise_a_bug()
        if self.newest <= checked:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout)
        self._raise_a_bug()

    def _raise_a_bug(self) -> None:
        if self.failure is not None and not isinstance(self.failure, InfrastructureFault):
            raise self.failure

    async def items(self, read: Callable[[], Awaitable[Any]], cursor: int, dialect: Any) -> Any:
        """`read()` (the events after `cursor` in `dialect`), shared by every stream that
        asks the same while the newest id stays the same. A read that failed is shared
        only by the streams that waited for it: the next asks the database again."""
        key = (cursor, dialect, self.newest)
        shared = self.reads.get(key)
        if shared is None:
            shared = self.reads[key] = asyncio.ensure_future(read())
            shared.add_done_callback(lambda done: self._forget_failed(key, done))
        return await asyncio.shield(shared)

    def _forget_failed(self, key: tuple[int, Any, int], done: asyncio.Future) -> None:
        if (done.cancelled() or done.exception() is not None) and self.reads.get(key) is done:
            del self.reads[key]

    async def _run(self) -> None:
        Feed.running += 1
        news = Listener(group_name(self.task_id))
        newest = database_sync_to_async(guarded(newest_event_id), thread_sensitive=False)
        poll = conf.TASKDECK.stream_poll_seconds
        try:
            await news.join()
            listening = asyncio.ensure_future(self._listen(news))
            try:
                while self.followers:
                    try:
                        found = await newest(self.task_id)
                    except Exception as exc:
                        first, self.failure = self.failure is None, exc
                        if first:  # told once to every stream waiting
                            log.warning("task %s's feed: its poll failed: %r", self.task_id, exc)
                            self._tell()
                    else:
                        if self.failure is not None:
                            log.warning("task %s's feed: its poll reads again", self.task_id)
                        self.failure = None
                        if found > self.newest:
                            self.newest = found
                            self.reads = {k: f for k, f in self.reads.items() if not f.done()}
                            self._tell()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.poke.wait(), poll)
                    self.poke.clear()
            finally:
                listening.cancel()
        finally:
            Feed.running -= 1
            with contextlib.suppress(Exception):
                await news.leave()

    def _tell(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    async def _listen(self, news: Listener) -> None:
        while True:
            if await news.wait(30.0):
                self.poke.set()


_feeds: dict[tuple[asyncio.AbstractEventLoop, str], Feed] = {}


@contextlib.asynccontextmanager
async def following(task_id: str) -> AsyncIterator[Feed]:
    """The task's feed in this process, started if none runs, for as long as the caller
    follows it."""
    loop = asyncio.get_running_loop()
    feed = _feeds.get((loop, task_id))
    if feed is None or feed.task.done():
        feed = _feeds[loop, task_id] = Feed(task_id, loop)
    feed.followers += 1
    try:
        yield feed
    finally:
        feed.followers -= 1
        if not feed.followers:
            feed.poke.set()  # it stops now, not at its next poll
            if _feeds.get((loop, task_id)) is feed:
                del _feeds[loop, task_id]
