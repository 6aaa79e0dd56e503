"""notify.Watchers: on the in-memory layer (the embedded default), a callback is woken on
its own event loop by every message of its group, from this process's `send` and from
the relay's thread for other processes' local wake-ups, without the channel layer in
between (the AG-UI log's reader is woken so at every projection pass: agui/fanout.py).
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from a2a import localwake, notify

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(
        notify.get_channel_layer() is None or notify.crosses_processes(notify.get_channel_layer()),
        reason="the in-memory layer's (Redis wakes Listeners instead)",
    ),
]


class Woken:
    """A callback that records the threads it ran on and lets a test await its calls."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.called = asyncio.Event()

    def __call__(self) -> None:
        self.threads.append(threading.get_ident())
        self.called.set()


async def turns(n: int = 3) -> None:
    """Let the loop run what was handed to it (`call_soon_threadsafe` from a thread that
    returned already: it is in the loop's ready queue)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_send_from_another_thread_wakes_the_watcher_on_its_loop():
    woken, group = Woken(), "test-watched"
    notify.watchers.add(group, woken)
    try:
        await asyncio.to_thread(notify.send, group, {"type": "test.poke"})
        await asyncio.wait_for(woken.called.wait(), 10)
        assert woken.threads == [threading.get_ident()]  # on its loop, not the sender's
        assert not notify.listened_here(notify.get_channel_layer(), group)

        await asyncio.to_thread(notify.send, "test-other-group", {"type": "test.poke"})
        await turns()
        assert len(woken.threads) == 1  # another group's message wakes nobody here
    finally:
        notify.watchers.discard(group, woken)
    await asyncio.to_thread(notify.send, group, {"type": "test.poke"})
    await turns()
    assert len(woken.threads) == 1  # discarded: not woken again
    assert notify.watchers.wake(group) is False


async def test_a_local_wake_up_from_another_process_wakes_the_watcher():
    if localwake.directory() is None:
        pytest.skip("local wake-ups are off here")
    woken, group = Woken(), "test-watched-relay"
    notify.watchers.add(group, woken)  # starts this process's relay thread, if not yet
    try:
        # what another process's `send` puts in every inbox of the machine (this one's
        # own included, as if it came from elsewhere)
        payload = json.dumps({"group": group, "message": {"type": "test.poke"}}).encode()
        assert localwake.broadcast("news", payload, to_self=True) >= 1
        await asyncio.wait_for(woken.called.wait(), 10)
        assert woken.threads == [threading.get_ident()]
    finally:
        notify.watchers.discard(group, woken)
