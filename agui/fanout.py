"""One reader of the AguiEvent log per server process, many sockets.

One, however many sockets open at once (issue 31): the first to register creates the
reader's task synchronously, before any await, and the others wait on its start; a socket
that goes while it waits is removed (`register_done`), and the reader stops once its last
socket went (`unregister` wakes it), the next socket starting a new one. (N sockets opening
together used to find no reader while the first one's start was still reading the database,
and start N; those of an aborted burst kept reading for queues nobody would ever remove:
~95 % CPU until restart.) /healthz shows `"sockets": {"open": n, "readers": 0 or 1}`.

A socket must not query the database per change: with 1,000 dashboards open that would
be 1,000 queries per change. The Tailer reads new log rows once (woken by a poke, or every
FALLBACK_POLL seconds should a poke be lost) and hands them to every registered socket's
queue. Pokes come from every process: over Redis, or over local wake-ups with the
in-memory layer, where they call the Tailer's wake-up directly (a2a.notify.Watchers), so a
worker's change reaches the sockets at once on the embedded default too.

Redis is only the wake-up call: while it is away (restarting, failing over) the Tailer
polls, and it re-joins the group by itself when Redis is back (a2a.notify's
Listener); sockets notice nothing but slower deltas.

On PostgreSQL it re-reads a window behind its cursor: ids are allocated at insert, so a
row with a lower id can commit after a higher one; rows already seen are skipped. (SQLite
has one writer at a time: its ids commit in order, and no window is read.) When it
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
import functools
import json
import logging
import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ag_ui.core import CustomEvent
from asgiref.sync import sync_to_async
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
)

from a2a.notify import Listener, crosses_processes, watchers
from agui import projection, retention, selectors
from agui.models import AguiEvent, LogRetention
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
COUNTS_EVENT = "taskdeck.counts"  # the counts over every task (agui.selectors.counts)
COUNTS_READ_SECONDS = 0.5  # the counts are read at most this often per process…
COUNTS_IDLE_SECONDS = 10.0  # …and this often with no change seen (a lost poke, compaction)


_reads: tuple[int, ThreadPoolExecutor] | None = None  # (pid, the reader's executor)
_notices: tuple[int, ThreadPoolExecutor] | None = None  # (pid, the lag's and counts')


def in_notices_thread(fn):
    """`fn` as an awaitable on the thread that reads the lag and the counts (as
    `in_reader_thread`, beside it: `Tailer._tell`)."""
    global _notices
    if _notices is None or _notices[0] != os.getpid():
        _notices = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="agui-notices"))
    return sync_to_async(kept_connection(fn), thread_sensitive=False, executor=_notices[1])


def in_reader_thread(fn):
    """`fn` as an awaitable run on the reader's own thread, never in the event loop's
    default executor: that one's few threads are what the server's requests run their
    sync work in (a blocking send's inline run waiting for SQLite's write lock holds
    one), and a read queued behind 16 sends in flight waited 100-400 ms before it ran —
    most of commit -> STATE_DELTA under load (bench/agui_fanout.py --load 16). One thread,
    made per process (a forked server must not inherit an executor whose thread stayed
    in its parent) and kept: the reader's reads are sequential anyway. Its connection is
    kept as `kept_connection` says."""
    global _reads
    if _reads is None or _reads[0] != os.getpid():
        _reads = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="agui-fanout"))
    return sync_to_async(kept_connection(fn), thread_sensitive=False, executor=_reads[1])


def release_threads() -> None:
    """End this process's reader and notices threads, their database connections closed
    first (they keep them: `kept_connection`). For a process that stops using them and
    goes on: the test suite, before it drops its database (two sessions of these threads
    outlived every test and held the drop up)."""
    global _reads, _notices
    for held in (_reads, _notices):
        if held is not None and held[0] == os.getpid():
            held[1].submit(connections.close_all).result()
            held[1].shutdown(wait=True)
    _reads = _notices = None


FRESH_SECONDS = projection.FRESH_SECONDS  # a connection used this recently: no ping
_used = threading.local()  # .at: when this thread's connection last served a read


def kept_connection(fn):
    """`fn` on this thread's connection, as channels' database_sync_to_async runs it (the
    connection closed first when it outlived CONN_MAX_AGE or an error left it unusable),
    but without the health check's `SELECT 1` before each use when the connection served
    a read less than FRESH_SECONDS ago: the reader reads at every change, and that ping
    was one more round trip to PostgreSQL between each commit and its STATE_DELTA. A
    connection that died meanwhile (a restarted server) fails the read: it is then closed
    and the read made once more on a new one, as the ping would have had it."""

    def run(*args: Any) -> Any:
        fresh = time.monotonic() - getattr(_used, "at", float("-inf")) < FRESH_SECONDS
        close_old_connections()
        if fresh and connection.connection is not None:
            connection.health_check_done = True
        try:
            return fn(*args)
        except (InterfaceError, OperationalError):
            if not fresh or connection.in_atomic_block:
                raise
            connection.close()
            return fn(*args)
        finally:
            _used.at = time.monotonic()
            close_old_connections()

    return run


@dataclass(frozen=True)
class Notice:
    """A CUSTOM event the Tailer hands every socket (the lag, the counts), with its JSON
    text encoded once here: 100 sockets would otherwise encode it 100 times in the event
    loop that also sends them the rows."""

    name: str
    value: Any
    text: str


def notice(name: str, value: Any) -> Notice:
    event = CustomEvent(name=name, value=value).model_dump(by_alias=True, mode="json")
    return Notice(name, event["value"], json.dumps(event, separators=(",", ":")))


def lag_notice(seconds: float) -> Notice:
    """The CUSTOM event that tells a socket how far the view is behind (0: caught up);
    queued like rows and sent as it is (consumers.py)."""
    return notice(LAG_EVENT, {"seconds": round(seconds, 1)})


# A log row as sockets get it: id, task id, task version, type, the event, and the event as
# the JSON text a socket sends (`encoded`).
Row = tuple[int, str, int, str, dict, str]


def encoded(rows: list[tuple[int, str, int, str, dict]]) -> list[Row]:
    """The rows with their events' JSON text: encoded once here, on the reader's thread,
    not once per socket on the event loop (100 sockets: 100 encodings of every event, in
    the loop that also serves every request)."""
    return [(*row, json.dumps(row[4], separators=(",", ":"))) for row in rows]


def counts_notice(counts: dict[str, Any]) -> Notice:
    """The CUSTOM event that gives a socket the counts over every task (the board's
    counts, the Inbox badge, the tab title), queued like rows (consumers.py)."""
    return notice(COUNTS_EVENT, counts)


@functools.cache
def _rows_sql(vendor: str) -> str:
    """The reader's one statement (`_rows_after`), in SQL of its own: built once, the same
    text at every read (so compiled and planned once), with the ids already seen as one
    parameter — the ORM's `exclude(id__in=…)` built and compiled a placeholder for each of
    the window's ids at every read: 1.9 ms of CPU against 0.6 for the reads it replaced."""
    events, kept = AguiEvent._meta.db_table, LogRetention._meta.db_table
    horizon = f"(SELECT r.horizon FROM {kept} AS r WHERE r.id = 1)"
    if vendor == "postgresql":
        return (
            f"SELECT e.id, e.task_id, e.task_version, e.type, e.event, {horizon} "
            f"FROM {events} AS e WHERE e.id > %s AND e.type <> %s AND NOT (e.id = ANY(%s)) "
            f"ORDER BY e.id LIMIT 5000"
        )
    # SQLite: the ids to skip as a JSON array; the rows as one JSON array in one result
    # row, with the horizon beside it even when there is no row (`_rows_after` says why)
    return (
        f"SELECT json_group_array(json_array(e.id, e.task_id, e.task_version, e.type, "
        f"json(e.event))), {horizon} FROM (SELECT * FROM {events} AS e WHERE e.id > %s "
        f"AND e.type <> %s AND e.id NOT IN (SELECT value FROM json_each(%s)) "
        f"ORDER BY e.id LIMIT 5000) AS e"
    )


def _rows_after(low: int, seen: set[int]) -> tuple[list[Row], int]:
    """The rows after `low` but those in `seen`, and the retention's horizon: one
    statement, so one round trip between a poke and the sockets (it was three). Only the
    rows not seen yet are read whole: decoding the window's events at every read was most
    of an idle reader's CPU. The horizon comes with the rows, from the same snapshot (one
    statement sees one, on PostgreSQL and SQLite alike, and the retention deletes rows and
    raises the horizon in one transaction): a row deleted before it is absent from the
    rows and at or below the horizon, so the caller, which compares the horizon with its
    cursor from before this read, sees the gap. With no row to carry it, the horizon is
    read by itself, after the rows (a row deleted between the two reads is then below it).
    `seen` is only read here, while its owner awaits this call.

    On SQLite the rows come as one JSON array in one result row, the horizon beside it:
    Python's sqlite3 lets go of the GIL at each step of a statement, and in a busy web
    process each step then waited for it (a read of 20 rows waited 20 times; p99 46 ms at
    load, bench/agui_fanout.py --load 16, against 4 ms in the quiet process beside it)."""
    skip = [i for i in seen if i > low]
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_rows_sql(connection.vendor), [low, TEXT, json.dumps(skip)])
            listed, horizon = cursor.fetchone()
        return encoded([tuple(row) for row in sorted(json.loads(listed))]), horizon or 0
    with connection.cursor() as cursor:
        cursor.execute(_rows_sql(connection.vendor), [low, TEXT, skip])
        found = cursor.fetchall()
    if not found:
        return [], retention.horizon()
    rows = [
        (row_id, task_id, version, kind, json.loads(event) if isinstance(event, str) else event)
        for row_id, task_id, version, kind, event, _ in found
    ]
    return encoded(rows), found[0][5] or 0


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
    """The process's reader of the log (`tailer()`). One `_run` loop at a time, however
    many sockets register at once: the first registration creates it synchronously, before
    any await, and every later one waits for the same start (`ready`); it stops once its
    last socket is gone, and the next registration starts a new one. `Tailer.running`
    counts the loops alive in this process (/healthz shows it: `stats()`)."""

    running = 0  # `_run` loops alive in this process, of any Tailer

    def __init__(self) -> None:
        self.queues: set[asyncio.Queue] = set()
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.ready: asyncio.Future | None = None  # the running loop's start: done once read
        self.loop: asyncio.AbstractEventLoop | None = None
        self.cursor = 0
        self.horizon = 0  # the retention's horizon as this Tailer last read it
        self.seen: deque[int] = deque(maxlen=WINDOW * 4)
        self.seen_set: set[int] = set()
        self.lag_read_at = float("-inf")  # time.monotonic() of the last lag reading
        self.lagging = False  # the sockets were last told of a lag over the notice
        self.counts_read_at = float("-inf")  # time.monotonic() of the last counts reading
        self.counts_due = False  # rows came since the counts were last read
        self.counts: dict[str, Any] | None = None  # as last read (every tenant's)
        self.notices: asyncio.Future | None = None  # the lag and counts reading in flight

    def add(self) -> asyncio.Queue:
        """A queue registered, and the reader running or starting: no await in here, so
        sockets opening together cannot each find no reader and start one (they did: N
        readers, and those of an aborted burst never stopped)."""
        queue: asyncio.Queue = asyncio.Queue()
        self.queues.add(queue)
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.loop is not loop:
            self.loop, self.wake = loop, asyncio.Event()
            self.ready = loop.create_future()
            self.task = loop.create_task(self._run(self.ready))
        return queue

    async def register(self) -> asyncio.Queue:
        """`add`, then `register_done`."""
        queue = self.add()
        await self.register_done(queue)
        return queue

    async def register_done(self, queue: asyncio.Queue) -> None:
        """Wait until the reader `add` started has read where the log stands: a socket
        reads its snapshot after this, so the rows the reader counts as seen at its start
        are in it. Should the start fail, or this wait be cancelled (the socket went), the
        queue is removed and the error raised."""
        try:
            await asyncio.shield(self.ready)
        except BaseException:
            self.unregister(queue)
            raise

    def unregister(self, queue: asyncio.Queue) -> None:
        self.queues.discard(queue)
        if not self.queues:
            self.wake.set()  # the reader stops now, not at its next poll

    def stats(self) -> dict[str, int]:
        """For /healthz: the sockets registered and the readers running in this process."""
        return {"open": len(self.queues), "readers": Tailer.running}

    def poke(self) -> None:
        self.wake.set()

    async def _run(self, ready: asyncio.Future) -> None:
        Tailer.running += 1
        try:
            start = in_reader_thread(_start)
            try:
                self.cursor, committed, self.horizon = await start()
            except asyncio.CancelledError:
                ready.cancel()
                raise
            except Exception as exc:  # the sockets waiting on it get it (and close)
                ready.set_exception(exc)
                ready.exception()  # retrieved: no "never retrieved" warning
                return
            for row_id in committed:
                self._see(row_id)
            ready.set_result(None)
            await self._read()
        finally:
            Tailer.running -= 1

    async def _read(self) -> None:
        listener = asyncio.ensure_future(self._listen())
        fetch = in_reader_thread(_rows_after)
        # SQLite has one writer at a time: its ids commit in order, so nothing can commit
        # behind the cursor and the window need not be read again (PostgreSQL: module doc)
        in_order = connection.vendor != "postgresql"
        try:
            while self.queues:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), FALLBACK_POLL)
                self.wake.clear()
                if not self.queues:
                    break  # the last socket went while it waited (`unregister` woke it)
                try:
                    if in_order:
                        rows, horizon = await fetch(self.cursor, ())
                    else:
                        rows, horizon = await fetch(max(0, self.cursor - WINDOW), self.seen_set)
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
                self.counts_due = self.counts_due or bool(fresh)
                if self.notices is None or self.notices.done():
                    self.notices = asyncio.ensure_future(self._tell())
        finally:
            listener.cancel()
            if self.notices is not None:
                self.notices.cancel()

    async def _tell(self) -> None:
        """The lag and the counts, when due: read on a thread of their own, beside the rows'
        reads, so that a change whose poke comes meanwhile is not read after them (their
        reading took 2-13 ms; 20 changes a second met it now and then). Started after the
        rows of the read that made them due were handed over, so they count those rows'
        changes; one reading at a time."""
        if time.monotonic() - self.lag_read_at >= LAG_READ_SECONDS:
            await self._tell_the_lag()
        since = time.monotonic() - self.counts_read_at
        if (self.counts_due and since >= COUNTS_READ_SECONDS) or since >= COUNTS_IDLE_SECONDS:
            await self._tell_the_counts()

    async def _tell_the_lag(self) -> None:
        """Read the lag; while over the notice, tell every socket, and tell them once when
        it fell back. A failed reading tells nothing (the rows' read logs the outage)."""
        self.lag_read_at = time.monotonic()
        read = in_notices_thread(projection.lag)
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

    async def _tell_the_counts(self) -> None:
        """Read the counts over every task (one reading per process, whatever the number of
        sockets) and, when they changed, hand them to every socket; a restricted key's
        socket reads its own tenant's then (consumers.py). Read after the rows: a change
        whose view rows were just handed over committed before, so it is counted."""
        self.counts_read_at = time.monotonic()
        self.counts_due = False
        read = in_notices_thread(selectors.counts)
        try:
            counts = await read()
        except Exception:
            log.warning("reading the task counts failed", exc_info=True)
            return
        if counts == self.counts:
            return
        self.counts = counts
        notice = counts_notice(counts)
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
        """Wake the loop on each poke. On the in-memory layer (the embedded default) a
        poke calls `wake.set` straight from the poking thread or the relay's
        (a2a.notify.Watchers: no turns of the loop in between). On Redis, a Listener: no
        layer error ends this (it used to, and then the Tailer never heard Redis again);
        it polls through an outage and re-joins after it, waking us once then to catch up
        on the pokes Redis lost."""
        news = Listener(VIEW_GROUP)
        if news.layer is None:
            return
        if not crosses_processes(news.layer):
            woken = self.wake.set  # this run's (a later run of the Tailer has its own)
            watchers.add(VIEW_GROUP, woken)
            try:
                await asyncio.Event().wait()  # until cancelled
            finally:
                watchers.discard(VIEW_GROUP, woken)
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


def stats() -> dict[str, int]:
    """/healthz's `sockets`: AG-UI sockets registered, log readers running (0 or 1)."""
    if _tailer is None:  # no socket yet (and not made here: this runs on a thread)
        return {"open": 0, "readers": Tailer.running}
    return _tailer.stats()
