"""A session follower's wait must give way to stop(): a cancel that lands while the wait
cleans up its helpers is the follower's own and must end it (it once was swallowed, and
session/close never answered; found by bench/acp_latency.py with Redis)."""

from __future__ import annotations

import asyncio

import pytest

from a2a.acp_door.live import LiveSession


class SlowToLeave:
    """A Listener whose wait takes a moment to unwind when cancelled (as a Redis receive
    does), held open until the test lets it go."""

    def __init__(self) -> None:
        self.unwinding = asyncio.Event()
        self.release = asyncio.Event()
        self.joined = True

    async def wait(self, seconds: float) -> bool:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.unwinding.set()
            await self.release.wait()
            raise
        return False


@pytest.mark.asyncio
async def test_a_stop_during_the_waits_cleanup_ends_the_wait():
    live = LiveSession(door=None, session=None, cursors={}, floor=0)
    live.listener = SlowToLeave()
    waiting = asyncio.ensure_future(live._wait(3600))
    await asyncio.sleep(0)
    live.poke()  # the wait ends and starts cancelling its helpers
    await live.listener.unwinding.wait()
    waiting.cancel()  # stop() arrives while the listener unwinds
    live.listener.release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiting
