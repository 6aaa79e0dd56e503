"""Logging filters the settings install (LOGGING): what a library logs is worded for us.

channels_redis's pub/sub layer logs every failed read of its subscription connection as
an ERROR with a traceback, once a second per event loop, for as long as Redis is away.
For Taskdeck a Redis outage is expected and survived (docs/production.md, "Redis": waiters
poll the database meanwhile, the connection and its subscriptions come back by
themselves), so such a record becomes one WARNING line, as Taskdeck's own outage
warnings are (a2a.notify). Any other record passes unchanged.
"""

from __future__ import annotations

import asyncio
import logging


def _is_outage(exc: BaseException | None) -> bool:
    """A lost, refused or timed-out connection (redis-py's exceptions or the OS's)."""
    return isinstance(exc, (OSError, asyncio.TimeoutError)) or (
        exc is not None and type(exc).__module__.startswith("redis.")
    )


class RedisOutage(logging.Filter):
    """On the `channels_redis.pubsub` logger: its connection errors as one warning line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.levelno >= logging.ERROR and _is_outage(exc):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = "channel layer: lost its Redis subscription (%s); reconnecting"
            record.args = (f"{type(exc).__name__}: {exc}",)
            record.exc_info, record.exc_text = None, None
        return True
