"""How the rest of Taskdeck hears that a task changed: announce after commit, listen with a
polling fallback. Every door uses it (A2A streams and blocking sends, AG-UI runs and the
view Tailer, ACP sessions); none owns it.

After commit, `announce` (an on-commit subscriber of `a2a.events`) tells the channel-layer
group `a2a-task-<id>` that the task's log grew. A waiter holds a `Listener` in that group
and re-reads the database when woken, or at the latest after its own poll interval: the
layer only ever wakes waiters early; the database holds the truth. The in-memory layer
cannot hear other processes (workers), Redis can; while Redis is away, waiters poll.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

if TYPE_CHECKING:
    from a2a.models import TaskEvent

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0  # how often a Listener that lost the channel layer tries to re-join
LAYER_CALL_SECONDS = 1.0  # the most one group_add/group_discard may take (a hung Redis)
REJOIN_SECONDS = 60.0  # a joined Listener renews its membership this often


def group_name(task_id: str) -> str:
    """The channel-layer group that hears about one task's changes."""
    return f"a2a-task-{task_id}"[:99]


def announce(event: TaskEvent) -> None:
    """On-commit subscriber: tell waiters on this task that its log grew."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(event.task_id), {"type": "task.event", "id": event.pk}
        )
    except Exception:  # a waiter falls back to polling; the change is committed anyway
        log.warning("could not announce event %s on the channel layer", event.pk)


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

    async def join(self) -> bool:
        """Join the group; False when there is no layer or it failed (`wait` retries)."""
        if self.layer is None:
            return False
        if self.channel is None:
            self.channel = await self.layer.new_channel()
        loop = asyncio.get_running_loop()
        for _ in range(2):  # after a restart, a pooled connection fails once, then reconnects
            try:
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
        # Memberships expire (Redis's group_expiry; the in-memory layer drops a channel whose
        # queued message expired): renew now and then; failing to is an outage.
        if loop.time() >= self.rejoin_at and not await self.join():
            self.joined = False
            return False
        deadline = loop.time() + timeout
        try:
            await _bounded(self.layer.receive(self.channel), timeout)
            return True
        except _LayerTimeout:
            return False
        except Exception as exc:  # Redis went away: poll until it is back
            log.warning("lost the channel layer (%s); polling meanwhile: %s", self.group, exc)
            self.joined = False
            self.retry_at = loop.time() + RETRY_SECONDS
            await asyncio.sleep(max(0.0, min(deadline, self.retry_at) - loop.time()))
            return False

    async def leave(self) -> None:
        if self.layer is None or self.channel is None:
            return
        self.joined = False
        try:
            await _bounded(self.layer.group_discard(self.group, self.channel), LAYER_CALL_SECONDS)
        except Exception:  # Redis is away: it forgot the group, or the entry will expire
            log.debug("group_discard failed for %s", self.group)
