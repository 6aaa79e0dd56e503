"""How the rest of Taskdeck hears that a task changed: announce after commit, listen with a
polling fallback. Every door uses it (A2A streams and blocking sends, AG-UI runs and the
view Tailer, ACP sessions); none owns it.

After commit, `announce` (an on-commit subscriber of `a2a.events`) tells the channel-layer
group `a2a-task-<id>` that the task's log grew. A waiter holds a `Listener` in that group
and re-reads the database when woken, or at the latest after its own poll interval: the
layer only ever wakes waiters early; the database holds the truth. Redis carries
announcements between processes; the in-memory layer, helped by local wake-ups (below),
between the processes of one machine. While Redis is away, waiters poll.

An announcement runs on the writer's path (a request thread, a worker), after its commit:
so it may never hold the writer on a hung Redis. `send` gives up after
TASKDECK["REDIS_SECONDS"] (0.1 s), and after a failure the layer's `Breaker` skips every
announcement for BREAKER_SECONDS: a frozen Redis costs one write that bound, the writes of
the next second nothing, and waiters poll meanwhile.

The in-memory layer (the embedded default) cannot reach other processes: there `send`
also hands each announcement to the other processes on this machine over a2a.localwake
(UNIX datagram sockets, no service needed), and a process whose Listeners wait relays what
arrives into its own in-memory layer (`_Relay`). So a worker's commit wakes the web
process's streams, blocking sends and AG-UI Tailer at once, as Redis does in a scale-out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from a2a import conf, localwake, os_threads

if TYPE_CHECKING:
    from a2a.models import TaskEvent

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0  # how often a Listener that lost the channel layer tries to re-join
LAYER_CALL_SECONDS = 1.0  # the most one group_add/group_discard may take (a hung Redis)
REJOIN_SECONDS = 60.0  # a joined Listener renews its membership this often
BREAKER_SECONDS = 1.0  # after a failed announcement, the next ones are skipped this long
SENDER_GRACE_SECONDS = 0.5  # beyond REDIS_SECONDS, should the sender loop itself be stuck


def group_name(task_id: str) -> str:
    """The channel-layer group that hears about one task's changes."""
    return f"a2a-task-{task_id}"[:99]


def call_seconds() -> float:
    """The most one Redis call on a writer's path may take (TASKDECK["REDIS_SECONDS"])."""
    return conf.TASKDECK.redis_seconds


class Breaker:
    """Keeps a writer's path from asking a Redis that has just failed.

    A frozen Redis costs every call its whole timeout; at a few hundred writes a second that
    is every request slowed. So after one failure the breaker opens: callers skip Redis for
    `seconds` (announcements are dropped — waiters poll the database; rate limits lapse),
    then the next call tries it again. One per process and use, shared by its threads: a
    float read and written whole, no lock (two threads may both try a probe; each is
    bounded anyway)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.open_until = 0.0

    def is_open(self) -> bool:
        return time.monotonic() < self.open_until

    def trip(self) -> None:
        self.open_until = time.monotonic() + self.seconds

    def reset(self) -> None:
        self.open_until = 0.0


layer_breaker = Breaker(BREAKER_SECONDS)  # the channel layer's, for `send`


def send(group: str, message: dict[str, Any]) -> bool:
    """Send `message` to `group` from synchronous code (on-commit subscribers: `announce`,
    the AG-UI poke) within call_seconds(); False when not sent (no layer, a failure, or the
    breaker open after one). Never raises: a lost wake-up only makes waiters poll.

    A layer that crosses processes (Redis) is sent to from this process's own sender loop
    (`_SenderLoop`): channels_redis keeps a connection pool per event loop, and the
    callers' loops are short-lived (a worker's slice, asgiref's loop per call in the
    scheduler) or busy (Daphne's, serving every socket), so a send used to open a
    connection each time or queue behind the sockets — long enough, on a loaded machine,
    to miss the bound and trip the breaker. The in-memory layer is sent to on the caller's
    loop via async_to_sync (its queues belong to the loop its receivers wait on). Either
    way an abandoned send is cancelled and its outcome consumed by `_bounded`, and
    redis-py drops the connection a cancelled read was on, so none is left half-read."""
    layer = get_channel_layer()
    if layer is None:
        return False
    if not crosses_processes(layer):  # other processes hear it over the local wake-ups
        localwake.broadcast("news", json.dumps({"group": group, "message": message}).encode())
        watchers.wake(group)  # this process's watchers, without the layer (`Watchers`)
        if not listened_here(layer, group):
            return True
    if layer_breaker.is_open():
        return False
    seconds = call_seconds()
    try:
        if crosses_processes(layer):
            coro = _send_bounded(layer, group, message, seconds)
            sent = asyncio.run_coroutine_threadsafe(coro, sender_loop.get())
            try:  # `_bounded` ends it after `seconds`; this only guards against a wedged loop
                sent.result(timeout=seconds + SENDER_GRACE_SECONDS)
            except concurrent.futures.TimeoutError:
                sent.cancel()
                raise _LayerTimeout from None
        else:
            async_to_sync(_send_bounded)(layer, group, message, seconds)
    except Exception as exc:  # a waiter falls back to polling; the change is committed anyway
        layer_breaker.trip()
        why = f"no answer within {seconds} s" if isinstance(exc, _LayerTimeout) else repr(exc)
        log.warning(
            "channel layer send to %s failed (%s); announcements skipped for %s s, waiters poll",
            group,
            why,
            layer_breaker.seconds,
        )
        return False
    return True


def listened_here(layer: Any, group: str) -> bool:
    """Does any Listener of this process wait in `group` of the in-memory layer?

    When none does (a worker, which only writes; a web process with no stream on this
    task), sending would only cost: async_to_sync from a thread without an event loop
    starts a thread and a loop for each call — measured, two of them per pause or resume
    made about a fifth of its CPU. A Listener that joins just after this check misses
    nothing: it reads the database after joining, and this change was committed before.
    The read of the layer's dict from another thread is safe under the GIL (a stale
    answer is one of those two cases)."""
    return bool(getattr(layer, "groups", {}).get(group))


async def _send_bounded(layer: Any, group: str, message: dict[str, Any], seconds: float) -> None:
    # The coroutine is made here, on the loop that runs it: made by the caller and never
    # run (async_to_sync refusing), it would warn "never awaited".
    await _bounded(layer.group_send(group, message), seconds)


class _SenderLoop:
    """An event loop in a daemon thread of this process, made on first use (again in a
    forked child), on which announcements to a cross-process layer are sent: its Redis
    connections stay open from one announcement to the next."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.pid != os.getpid() or self.loop is None or self.loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self._run, args=(loop,), name="taskdeck-announce", daemon=True
                ).start()
                self.pid, self.loop = os.getpid(), loop
            return self.loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        os_threads.name()
        loop.run_forever()


sender_loop = _SenderLoop()


def start_sender() -> None:
    """Start the sender loop's thread now, when the layer crosses processes, rather than
    on the first announcement: it runs at the priority of the thread that starts it
    (dashboard/call_threads.py)."""
    layer = get_channel_layer()
    if layer is not None and crosses_processes(layer):
        sender_loop.get()


def crosses_processes(layer: Any) -> bool:
    """Does this channel layer reach other processes (Redis), or only this one?"""
    return not isinstance(layer, InMemoryChannelLayer)


class Watchers:
    """Callbacks woken on their event loop by every message of a group, on the in-memory
    layer only: from `send` for this process's messages, from the relay's thread for other
    processes'. For a reader that needs the wake-up alone, and needs it soon: the AG-UI
    log's reader (agui.fanout), woken at every projection pass. A Listener's way costs it
    the layer's send (from a projector thread, async_to_sync: a loop and a thread per
    call) and three or four turns of a loop that also serves every request and socket,
    each a wait at load; a callback is one `call_soon_threadsafe`. Redis, which crosses
    processes, keeps its Listeners."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.groups: dict[str, dict[Callable[[], None], asyncio.AbstractEventLoop]] = {}

    def add(self, group: str, callback: Callable[[], None]) -> None:
        """Call `callback()` on the running loop at each message of `group` (local wake-ups
        of other processes included: the relay's thread starts here if it has not yet)."""
        loop = asyncio.get_running_loop()
        layer = get_channel_layer()
        if layer is not None and not crosses_processes(layer):
            relay.attach(layer, loop)
        with self.lock:
            self.groups.setdefault(group, {})[callback] = loop

    def discard(self, group: str, callback: Callable[[], None]) -> None:
        with self.lock:
            self.groups.get(group, {}).pop(callback, None)

    def wake(self, group: str) -> bool:
        """Wake `group`'s watchers (from any thread); False when it has none."""
        with self.lock:
            found = list(self.groups.get(group, {}).items())
        for callback, loop in found:
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                loop.call_soon_threadsafe(callback)
        return bool(found)


watchers = Watchers()


class _Relay:
    """Puts announcements that other processes sent over a2a.localwake into this process's
    in-memory layer, so that its Listeners wake as they would with Redis.

    One inbox and one daemon thread per process, started by the first Listener that joins
    (a worker that only writes binds nothing). The thread blocks in select; what arrives
    is handed to every event loop a Listener joined from (Daphne has one), since the
    in-memory layer's queues belong to their loop. Announcements that arrive together are
    merged per group: a Listener only needs to know that its task changed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def attach(self, layer: Any, loop: asyncio.AbstractEventLoop) -> None:
        with self.lock:
            if self.pid != os.getpid():  # first Listener of this process (or a forked child)
                self.pid = os.getpid()
                self.loops = weakref.WeakSet()
                try:
                    inbox = localwake.Inbox("news")
                except localwake.Unavailable as why:
                    log.info("no local wake-ups (%s): Listeners poll for other processes", why)
                else:
                    threading.Thread(
                        target=self._run, args=(inbox, layer), name="taskdeck-news", daemon=True
                    ).start()
            self.loops.add(loop)

    def _run(self, inbox: localwake.Inbox, layer: Any) -> None:
        while True:
            try:
                payloads = inbox.wait(None)
            except (OSError, ValueError):  # the inbox was closed: the process is exiting
                return
            news: dict[str, dict[str, Any]] = {}
            for payload in payloads:
                try:
                    item = json.loads(payload)
                    group = str(item["group"])
                    message = dict(item["message"])
                except (ValueError, KeyError, TypeError):
                    log.debug("ignored a malformed local wake-up: %r", payload[:200])
                    continue
                # Only news some Listener here waits for is handed to the loops: every
                # commit of every process arrives here, and a hand-over wakes a busy
                # loop. One that joins just after this check misses nothing (it reads
                # the database after joining: `listened_here`).
                watchers.wake(group)
                if listened_here(layer, group):
                    news[group] = message
            for loop in list(self.loops):
                if loop.is_closed():
                    self.loops.discard(loop)
                elif news and loop.is_running():
                    asyncio.run_coroutine_threadsafe(_deliver(layer, news), loop)


async def _deliver(layer: Any, news: dict[str, dict[str, Any]]) -> None:
    for group, message in news.items():
        try:
            await layer.group_send(group, message)
        except Exception:  # a full channel, a bad name: that waiter polls instead
            log.debug("relaying a local wake-up to %s failed", group, exc_info=True)


relay = _Relay()


def announce(event: TaskEvent) -> None:
    """On-commit subscriber: tell waiters on this task that its log grew (bounded, `send`)."""
    send(group_name(event.task_id), {"type": "task.event", "id": event.pk})


class _LayerTimeout(Exception):
    """A channel-layer call did not finish within its bound."""


def _drop_outcome(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: asyncio must not log it as "never retrieved"


async def _bounded(coro: Any, seconds: float) -> Any:
    """Await a channel-layer call for at most `seconds` (_LayerTimeout after that).

    Not asyncio.wait_for: redis-py turns the cancellation of a pending read into its own
    TimeoutError, which wait_for never retrieves when the waiter itself is cancelled (a
    client hung up), and asyncio then logs it as an error. Here an abandoned call is
    cancelled and its outcome consumed, whatever it is."""
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_drop_outcome)
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_drop_outcome)
        raise _LayerTimeout
    return task.result()


class Listener:
    """A channel in one group of the channel layer, for a waiter that must outlive the
    layer's outages (streams, blocking sends, AG-UI runs, the AG-UI Tailer).

    The layer only wakes waiters early; the database holds the truth. So when Redis goes
    away (a restart, a failover) no layer error escapes: waiting degrades to sleeping (the
    caller re-reads the database, as it does with the in-memory layer), and the listener
    tries to re-join every RETRY_SECONDS, since a restarted Redis has forgotten the group.
    Re-joining ends the wait at once: what was announced meanwhile is lost, so the caller
    re-reads.
    """

    def __init__(self, group: str) -> None:
        self.layer = get_channel_layer()
        self.group = group
        self.channel: str | None = None
        self.joined = False
        self.retry_at = 0.0
        self.rejoin_at = 0.0
        # The receive in flight: kept across waits that time out, so a message that arrives
        # between two waits is held for the next (the pub/sub layer keeps none for a
        # channel nobody receives on, and a cancelled receive there drops the channel).
        self.receiving: asyncio.Task | None = None

    async def join(self) -> bool:
        """Join the group; False when there is no layer or it failed (`wait` retries)."""
        if self.layer is None:
            return False
        loop = asyncio.get_running_loop()
        if not crosses_processes(self.layer):
            relay.attach(self.layer, loop)  # other processes' announcements, locally
        for _ in range(2):  # after a restart, a pooled connection fails once, then reconnects
            try:
                if self.channel is None:  # the pub/sub layer subscribes to it in Redis
                    self.channel = await _bounded(self.layer.new_channel(), LAYER_CALL_SECONDS)
                await _bounded(self.layer.group_add(self.group, self.channel), LAYER_CALL_SECONDS)
            except Exception as exc:  # _LayerTimeout included: a hung Redis must not stall us
                log.debug("could not join %s on the channel layer: %r", self.group, exc)
            else:
                self.joined = True
                self.rejoin_at = loop.time() + REJOIN_SECONDS
                return True
        self.retry_at = loop.time() + RETRY_SECONDS
        return False

    async def wait(self, timeout: float) -> bool:
        """Sleep until the group hears news, or `timeout`. True when woken early (news, or
        back in the group after an outage): the caller should re-read the log."""
        loop = asyncio.get_running_loop()
        if self.layer is None:
            await asyncio.sleep(timeout)
            return False
        if not self.joined:
            if loop.time() >= self.retry_at and await self.join():
                log.info("back on the channel layer: %s", self.group)
                return True
            await asyncio.sleep(max(0.0, min(timeout, self.retry_at - loop.time())))
            return False
        # Memberships may expire (the in-memory layer drops a channel whose queued message
        # expired; channels_redis's default layer has a group_expiry): renew now and then;
        # failing to is an outage. (On the pub/sub layer a renewal costs nothing.)
        if loop.time() >= self.rejoin_at and not await self.join():
            self.joined = False
            return False
        deadline = loop.time() + timeout
        if self.receiving is None:
            self.receiving = asyncio.ensure_future(self.layer.receive(self.channel))
        try:
            done, _ = await asyncio.wait({self.receiving}, timeout=timeout)
        except asyncio.CancelledError:  # the waiter went away: so does its receive
            self._stop_receiving()
            raise
        if not done:
            return False  # the receive stays pending for the next wait
        received, self.receiving = self.receiving, None
        try:
            received.result()
            return True
        except Exception as exc:  # Redis went away: poll until it is back
            log.warning("lost the channel layer (%s); polling meanwhile: %s", self.group, exc)
            self.joined = False
            self.retry_at = loop.time() + RETRY_SECONDS
            await asyncio.sleep(max(0.0, min(deadline, self.retry_at) - loop.time()))
            return False

    def _stop_receiving(self) -> None:
        if self.receiving is not None:
            self.receiving.cancel()
            self.receiving.add_done_callback(_drop_outcome)
            self.receiving = None

    async def leave(self) -> None:
        self._stop_receiving()
        if self.layer is None or self.channel is None:
            return
        self.joined = False
        try:
            await _bounded(self.layer.group_discard(self.group, self.channel), LAYER_CALL_SECONDS)
        except Exception:  # Redis is away: it forgot the group, or the entry will expire
            log.debug("group_discard failed for %s", self.group)
