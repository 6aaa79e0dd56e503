"""One reader of the AguiEvent log per server process, many sockets.

A socket must not query the database per change: with 1,000 dashboards open that would
be 1,000 queries per change. The Tailer reads new log rows once (woken by a channel-layer
poke, or every FALLBACK_POLL seconds should a poke be lost) and hands them to every
registered socket's queue. Pokes come from every process: over Redis, or over local
wake-ups with the in-memory layer (a2a.notify relays them), so a worker's change reaches
the sockets at once on the embedded default too.

Redis is only the wake-up call: while it is away (restarting, failing over) the Tailer
polls, and it re-joins the group by itself when Redis is back (a2a.notify's
Listener); sockets notice nothing but slower deltas.

It re-reads a window behind its cursor: on PostgreSQL ids are allocated at insert, so a
row with a lower id can commit after a higher one; rows already seen are skipped. When it
starts, the rows of that window already committed count as seen: every socket registers
before it reads its snapshot, so they are in it (a socket whose snapshot was cut to its
byte budget would otherwise take the creations of tasks it was cut from as new). Sockets
drop anything at or below the task version they already hold (see consumers.py).

Old rows are deleted (agui/retention.py): only those of tasks that left the view long ago,
which a Tailer has read unless it was stalled for longer than the retention. Should it
have been, it would miss them silently; so every read also reads the retention's horizon
(the highest id deleted), and when that passes the cursor the Tailer hands every socket
RESYNC instead: each starts again from a fresh snapshot.

The live view is projected after the writer's commit (docs/design/projection-after-commit.md,
D8), so it may lag behind the tasks. While sockets are registered the Tailer reads the lag
(agui.projection.lag: one query) at most once every LAG_READ_SECONDS; while it is over
LAG_NOTICE_SECONDS every socket gets a CUSTOM event `taskdeck.lag` with the lag in seconds
at each reading (so a socket that connects meanwhile hears it too), and once more with 0
when it falls back. The dashboard shows it in its connection status (static/js/live.js).
(Run streams register here too, for wake-ups only: a notice just wakes one, agui/runs.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import Any

from ag_ui.core import CustomEvent
from channels.db import database_sync_to_async

from a2a.notify import Listener
from agui import projection, retention
from agui.models import AguiEvent
from agui.projector import TEXT, VIEW_GROUP

log = logging.getLogger(__name__)
FALLBACK_POLL = 0.5
LISTEN_SECONDS = 30.0  # a listening Tailer waits on the layer this long per receive
WINDOW = 500
QUEUE_LIMIT = 200  # batches; a socket this far behind resyncs from a fresh snapshot
RESYNC = "resync"  # queued instead of rows: rows this Tailer had not read were deleted
LAG_READ_SECONDS = 1.0  # the lag is read at most this often per process
LAG_NOTICE_SECONDS = 2.0  # sockets are told while the lag is over this
LAG_EVENT = "taskdeck.lag"  # the CUSTOM event's name


def lag_notice(seconds: float) -> dict[str, Any]:
    """The CUSTOM event that tells a socket how far the view is behind (0: caught up);
    queued like rows and sent as it is (consumers.py)."""
    event = CustomEvent(name=LAG_EVENT, value={"seconds": round(seconds, 1)})
    return event.model_dump(by_alias=True, mode="json")


def _rows_after(low: int) -> tuple[list[tuple[int, str, int, str, dict]], int]:
    """The rows after `low`, then the retention's horizon. In that order: a row deleted
    before the rows were read is below the horizon read after them, so the caller, which
    compares it with its cursor from before this read, sees the gap. (Read the other way
    round, a row deleted between the two reads was missing from these rows, and the next
    horizon would be compared with a cursor already past it.)"""
    rows = list(
        AguiEvent.objects.filter(id__gt=low)
        .exclude(type=TEXT)
        .order_by("id")
        .values_list("id", "task_id", "version", "type", "event")[:5000]
    )
    return rows, retention.horizon()


def newest_id() -> int:
    """The id of the newest row of the log (0 when empty): a socket reads it before its
    snapshot, so it can tell rows its snapshot already decided on (consumers.py)."""
    return AguiEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _start() -> tuple[int, list[int], int]:
    """The newest row id, the ids of the committed rows in the window behind it, and the
    retention's horizon (what was deleted before this Tailer started is nobody's gap:
    every socket registers before it reads its snapshot)."""
    horizon = retention.horizon()
    top = newest_id()
    committed = list(AguiEvent.objects.filter(id__gt=top - WINDOW).values_list("id", flat=True))
    return top, committed, horizon


class Tailer:
    def __init__(self) -> None:
        self.queues: set[asyncio.Queue] = set()
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.cursor = 0
        self.horizon = 0  # the retention's horizon as this Tailer last read it
        self.seen: deque[int] = deque(maxlen=WINDOW * 4)
        self.seen_set: set[int] = set()
        self.lag_read_at = float("-inf")  # time.monotonic() of the last lag reading
        self.lagging = False  # the sockets were last told of a lag over the notice

    async def register(self) -> asyncio.Queue:
        queue: asyncio.Queue = asyncio.Queue()
        self.queues.add(queue)
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.loop is not loop:
            self.loop, self.wake = loop, asyncio.Event()
            self.cursor, committed, self.horizon = await database_sync_to_async(_start)()
            for row_id in committed:
                self._see(row_id)
            self.task = asyncio.ensure_future(self._run())
        return queue

    def unregister(self, queue: asyncio.Queue) -> None:
        self.queues.discard(queue)

    def poke(self) -> None:
        self.wake.set()

    async def _run(self) -> None:
        listener = asyncio.ensure_future(self._listen())
        fetch = database_sync_to_async(_rows_after, thread_sensitive=False)
        try:
            while self.queues:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), FALLBACK_POLL)
                self.wake.clear()
                try:
                    rows, horizon = await fetch(max(0, self.cursor - WINDOW))
                except Exception:
                    log.exception("reading the AG-UI log failed; retrying")
                    continue
                if horizon > self.horizon:
                    # the cursor from before this read: rows above it deleted unread
                    if horizon > self.cursor:
                        log.warning("AG-UI log rows after #%d were deleted unread", self.cursor)
                        for queue in list(self.queues):
                            queue.put_nowait(RESYNC)
                    self.horizon = horizon
                fresh = [r for r in rows if r[0] not in self.seen_set]
                for row in fresh:
                    self._see(row[0])
                    self.cursor = max(self.cursor, row[0])
                if fresh:
                    for queue in list(self.queues):
                        queue.put_nowait(fresh)  # unbounded; a socket far behind resyncs
                if time.monotonic() - self.lag_read_at >= LAG_READ_SECONDS:
                    await self._tell_the_lag()
        finally:
            listener.cancel()

    async def _tell_the_lag(self) -> None:
        """Read the lag; while over the notice, tell every socket, and tell them once when
        it fell back. A failed reading tells nothing (the rows' read logs the outage)."""
        self.lag_read_at = time.monotonic()
        read = database_sync_to_async(projection.lag, thread_sensitive=False)
        try:
            seconds = (await read()).seconds
        except Exception:
            log.warning("reading the projection's lag failed", exc_info=True)
            return
        if seconds > LAG_NOTICE_SECONDS:
            self.lagging = True
        elif self.lagging:
            self.lagging, seconds = False, 0.0
        else:
            return
        notice = lag_notice(seconds)
        for queue in list(self.queues):
            queue.put_nowait(notice)

    def _see(self, row_id: int) -> None:
        if row_id in self.seen_set:
            return
        if len(self.seen) == self.seen.maxlen:
            self.seen_set.discard(self.seen[0])
        self.seen.append(row_id)
        self.seen_set.add(row_id)

    async def _listen(self) -> None:
        """Wake the loop on each poke. No layer error ends this (it used to, and then the
        Tailer never heard Redis again): the Listener polls through an outage and re-joins
        after it, waking us once then to catch up on the pokes Redis lost."""
        news = Listener(VIEW_GROUP)
        if news.layer is None:
            return
        try:
            await news.join()
            while True:
                if await news.wait(LISTEN_SECONDS):
                    self.wake.set()
        finally:
            await news.leave()


_tailer: Tailer | None = None


def tailer() -> Tailer:
    global _tailer
    if _tailer is None:
        _tailer = Tailer()
    return _tailer
