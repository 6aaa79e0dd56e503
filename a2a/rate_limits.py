"""Rate limits per tenant (issue 12, item 5; per tenant since issue 32): how many tasks a
tenant may create, and how many times it may re-subscribe (a fresh snapshot costs the
server more than a live stream), per minute. A caller past its limit gets RateLimited
with the seconds to wait; each door answers it as 429 with Retry-After (JSON-RPC: HTTP
429, code -32029; AG-UI runs: RUN_ERROR `rate_limited`; ACP: -32029 with data.retryAfter;
the AG-UI socket: an error message).

Counted per tenant, not per key: every key of one owner shares one count (12 keys of one
tenant made 1,400 tasks in 40 s when each key had its own), anonymous callers are one
tenant. Who is counted:
- API keys, operator keys too: a key is automation, and a looping script holding the
  operator scope costs the server what any other does — more, as it sees every task.
  An operator key counts for its owner's tenant like the owner's other keys.
- Dashboard users are not counted for new tasks or resyncs: a person clicking cannot
  reach the limits, and an operator must not be refused a pause or an answer in an
  incident because a script of the same name was busy.
- Socket opens (the AG-UI WebSocket, agui/consumers.py; issue 31) are counted for every
  kind of caller, dashboard users too (each a tenant of their own), since each open costs
  the web process an authentication and a snapshot whoever asks. Over the limit the
  socket is closed with 4429 and a reason saying when to retry.
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
LIMITED_KINDS = ("apikey", "anonymous")  # new tasks and resyncs
EVERY_KIND = ("socket",)  # counted for every kind of caller
WHAT = {"create": "new tasks", "resync": "resyncs", "socket": "socket opens"}
cache_breaker = Breaker(BREAKER_SECONDS)  # open: the cache just failed, do not count


class RateLimited(TaskError):
    def __init__(self, what: str, limit: int, retry_after: int) -> None:
        self.what, self.limit, self.retry_after = what, limit, retry_after
        super().__init__(f"more than {limit} {what} a minute; retry in {retry_after} s")


def take(what: str, actor: Actor) -> None:
    """Count one `what` ("create" | "resync" | "socket") for `actor`'s tenant; RateLimited
    past its limit."""
    if actor.kind not in LIMITED_KINDS and what not in EVERY_KIND:
        return
    limit = conf.RATES.per_minute(what)
    if limit <= 0:
        return
    if cache_breaker.is_open():
        return
    now = time.time()
    window = int(now // WINDOW)
    # a tenant is "key:<owner>", "user:<name>" or "anonymous": never two kinds under one
    who = f"tenant:{actor.tenant}" if actor.tenant else f"{actor.kind}:{actor.name}"
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
