"""Per-key rate limits (issue 12, item 5): how many tasks a key may create, and how many
times it may re-subscribe (a fresh snapshot costs the server more than a live stream),
per minute. A caller past its limit gets RateLimited with the seconds to wait; each door
answers it as 429 with Retry-After (JSON-RPC: HTTP 429, code -32029; AG-UI runs: RUN_ERROR
`rate_limited`; ACP: -32029 with data.retryAfter; the AG-UI socket: an error message).

Only API keys (and anonymous callers) are limited: operators act through the dashboard.
Socket opens (the AG-UI WebSocket, agui/consumers.py; issue 31) are the exception: they
are counted per tenant (every key of one owner shares the count; a dashboard user is a
tenant of their own) and for every kind of caller, operators too, since each open costs
the web process an authentication and a snapshot whoever asks. Over the limit the socket
is closed with 4429 and a reason saying when to retry.
Counts live in Django's cache — Redis when REDIS_URL is set, so every process shares them;
per process on the embedded default (`make run` has two web processes: up to twice the
limit there). Fixed one-minute windows: simple, and a burst is at
most twice the rate across a window's edge.

Counting runs on the request path, so a Redis that hangs must not hold it: the cache's
connects and reads give up after TASKDECK_REDIS_SECONDS (dashboard/settings.py,
`redis_caches`), a failure lets the request through uncounted (the limits fail open), and
then the breaker skips counting for a second (a2a.notify.Breaker), so a frozen Redis costs
one request that bound and the next second's requests nothing.

Settings: TASKDECK_RATE_CREATE (default 120 a minute), TASKDECK_RATE_RESYNC (60) and
TASKDECK_RATE_SOCKET (60); 0 turns a limit off.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from django.core.cache import cache

from a2a import conf
from a2a.errors import TaskError
from a2a.notify import BREAKER_SECONDS, Breaker

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from a2a.services import Actor

WINDOW = 60  # seconds
LIMITED_KINDS = ("apikey", "anonymous")
PER_TENANT = ("socket",)  # counted per tenant, for every kind of caller
WHAT = {"create": "new tasks", "resync": "resyncs", "socket": "socket opens"}
cache_breaker = Breaker(BREAKER_SECONDS)  # open: the cache just failed, do not count


class RateLimited(TaskError):
    def __init__(self, what: str, limit: int, retry_after: int) -> None:
        self.what, self.limit, self.retry_after = what, limit, retry_after
        super().__init__(f"more than {limit} {what} a minute; retry in {retry_after} s")


def take(what: str, actor: Actor) -> None:
    """Count one `what` ("create" | "resync" | "socket") for `actor`; RateLimited past
    its limit."""
    if actor.kind not in LIMITED_KINDS and what not in PER_TENANT:
        return
    limit = conf.RATES.per_minute(what)
    if limit <= 0:
        return
    if cache_breaker.is_open():
        return
    now = time.time()
    window = int(now // WINDOW)
    who = f"{actor.kind}:{actor.name}"
    if what in PER_TENANT and actor.tenant:
        who = f"tenant:{actor.tenant}"
    key = f"taskdeck:rate:{what}:{who}:{window}"
    try:
        cache.add(key, 0, timeout=WINDOW * 2)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=WINDOW * 2)
            count = 1
    except Exception as exc:  # the cache (Redis) is away or hung: limits lapse, requests go on
        cache_breaker.trip()
        log.warning(
            "rate limits not counted for %s s: the cache failed (%r)", cache_breaker.seconds, exc
        )
        return
    if count > limit:
        retry = max(1, math.ceil((window + 1) * WINDOW - now))
        raise RateLimited(WHAT.get(what, what), limit, retry)
