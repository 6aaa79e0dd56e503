"""Each Daphne process of `manage.py serve --web N` takes one new connection at a time.

The web processes share one listening socket (a2a/management/commands/serve.py), and
every one of them is woken when connections wait on it. Twisted's listening port then
accepts up to `numberAccepts` of them in one go (100 at first, growing while the queue
stays full), so the first process to run took every connection of a burst: wrk's sixteen
connections, or a fleet's clients reconnecting after a restart, landed nearly all on one
process, which ran the calls on its one interpreter while the other idled. Under
bench/agui_fanout.py --load 16 that process's event loop started the log reader's read
40 ms after a poke at p99, against 1 ms in its idle sibling (docs/production.md,
"Garbage and the tail").

Accepting one connection per wake-up spreads a burst over the processes, and over time
favours the least busy one: a process deep in its work comes back to the socket later
and finds the connection taken. A process alone on its socket accepts as fast as before,
one per turn of its loop.

It patches twisted.internet.tcp.Port.doRead (`install()`, called when dashboard.asgi is
imported by a Daphne process); tests/test_fair_accept.py checks it on a real port, and
that Twisted as shipped still takes a burst at once.
"""

from __future__ import annotations

_installed = False


def install() -> None:
    """Patch Twisted's listening port to accept one connection per wake-up (idempotent)."""
    global _installed
    if _installed:
        return
    from twisted.internet import tcp

    do_read = tcp.Port.doRead

    def one_at_a_time(self):
        self.numberAccepts = 1  # Twisted raises it after a full round; never here
        return do_read(self)

    tcp.Port.doRead = one_at_a_time
    _installed = True
