"""A client's HTTP connection to a web process is closed at its first answer after it has
been open TASKDECK_HTTP_KEEPALIVE_SECONDS (5 s), so the web processes that share a port
keep sharing the clients that hold their connections open.

Why: the web processes of `manage.py serve --web N` share one listening socket, and the
kernel hands each new connection to whichever process accepts first. A client that opens
its connections at once (an A2A client's pool, a proxy's upstream pool, wrk) can find them
all on one process: in three of four runs of `bench/agui_fanout.py --load 16`, all sixteen
of wrk's connections landed on one of the two, which then ran every call while the other
only served sockets, and the run completed 42-55 sends a second where an 8/8 split
completed 55-65 (docs/production.md, "The fan-out under a real load"). fair_accept.py
spreads a burst only over the processes ready to accept at that moment; a process still
starting, or busy, takes none of it, and the split then lasts as long as the client keeps
its connections: for ever, with a pool.

Closing each connection after a few seconds makes the client open a new one, and which
process takes it is decided again, the less busy one being likelier to be first
(fair_accept.py). Time, not a count of answers as nginx's `keepalive_requests`: a hundred
blocking sends on one connection took half a minute under that load, longer than the
imbalance is worth bearing. Cost: one new TCP connection per connection every 5 s of use.
The answer that ends a connection says so (`Connection: close`) and is sent whole first,
as HTTP/1.1 requires; client libraries reconnect on it. A WebSocket upgrade needs no
exception: Daphne hands the connection to the socket, which answers the handshake itself,
so a `close` decided here is never sent (tests/test_keepalive_limit.py checks it).
"""

from __future__ import annotations

import time

from a2a import conf

_installed = False


def install() -> None:
    """Patch twisted.web.http.HTTPChannel (idempotent; dashboard.asgi calls it in each
    Daphne process)."""
    global _installed
    if _installed:
        return
    from twisted.web import http

    limit = conf.TASKDECK.http_keepalive_seconds
    check = http.HTTPChannel.checkPersistence

    def limited(self, request, version) -> bool:
        keep = check(self, request, version)
        if not keep or not limit:
            return keep
        now = time.monotonic()
        opened = self.__dict__.setdefault("taskdeck_opened", now)  # at its first request
        if now - opened < limit:
            return True
        request.responseHeaders.setRawHeaders(b"Connection", [b"close"])
        return False

    http.HTTPChannel.checkPersistence = limited
    _installed = True
