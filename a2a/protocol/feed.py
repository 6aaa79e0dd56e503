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
        self.changed = asyncio.Event()  # set and replaced whenever `newest` grows
        self.poke = asyncio.Event()  # wakes the reader (a follower left, or news)
        self.reads: dict[tuple[int, Any, int], asyncio.Future] = {}  # shared `items`
        self.failure: Exception | None = None  # the last read's error, until one succeeds
        self.task = loop.create_task(self._run())

    async def wait(self, checked: int, timeout: float) -> None:
        """Until the newest id passed `checked`, or `timeout` seconds. Raises the error of
        the feed's read when it fails (the database is away): each stream then ends as it
        did when its own read failed."""
        if self.newest <= checked and self.failure is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout)
        if self.failure is not None:
            raise self.failure

    async def items(self, read: Callable[[], Awaitable[Any]], cursor: int, dialect: Any) -> Any:
        """`read()` (the events after `cursor` in `dialect`), shared by every stream that
        asks the same while the newest id stays the same."""
        key = (cursor, dialect, self.newest)
        shared = self.reads.get(key)
        if shared is None:
            shared = self.reads[key] = asyncio.ensure_future(read())
        return await asyncio.shield(shared)

    async def _run(self) -> None:
        Feed.running += 1
        news = Listener(group_name(self.task_id))
        newest = database_sync_to_async(newest_event_id, thread_sensitive=False)
        poll = conf.TASKDECK.stream_poll_seconds
        try:
            await news.join()
            listening = asyncio.ensure_future(self._listen(news))
            try:
                while self.followers:
                    try:
                        found = await newest(self.task_id)
                    except Exception as exc:
                        log.warning("reading task %s's newest event failed: %r", self.task_id, exc)
                        self.failure = exc  # told to every stream waiting
                        self._tell()
                    else:
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
