"""The database failing, told apart from code failing: shared by every part that talks to it.

The infrastructure is Taskdeck's database (a restart, a failover, a terminated backend).
An error of that kind (`is_infrastructure`) is worth waiting out and retrying; any other
error is a bug or a rule break, and retrying would repeat it. The runtime retries the
work (a2a.runtime.faults, Temporal's rule); a stream retries its read from its cursor and
ends with an error frame past TASKDECK_STREAM_OUTAGE_SECONDS (a2a.protocol.stream,
agui.runs); a request answers in its door's own protocol, -32603 / HTTP 503 (docs/protocol.md,
"During a database outage"). Core, so that every room may use it (tests/test_architecture.py).
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

# What a lost or refused connection raises. Not IntegrityError, DataError or
# ProgrammingError: those are bugs or rule breaks, and retrying would repeat them.
INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class InfrastructureFault(Exception):
    """A database call failed for a reason outside the code (see the module docstring).

    Raised into the agent's code where the runtime's database call failed, so that the
    agent stops there; the executor also remembers it on the context, so an agent that
    catches it by accident still does not turn a lost connection into its own failure."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(describe(cause))


def describe(exc: BaseException) -> str:
    """`Type: first line of the message`, short enough for a timeline entry."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


class Outage:
    """One reader's bookkeeping through a database outage: since when the database has been
    unreachable for it, said once in the log when that starts ("<who>: <fault>; retrying")
    and once when a read works again ("<who>: the database is back"). The readers that
    wait an outage out (a stream, an AG-UI run, an ACP session's follower) each decide
    what to do meanwhile and past the bound; this is what they share.

    `clock` is the reader's own (an event loop's `time`): the length of an outage is
    compared with TASKDECK_STREAM_OUTAGE_SECONDS on it."""

    def __init__(self, who: str, clock: Callable[[], float], logger: logging.Logger) -> None:
        self.who, self.clock, self.log = who, clock, logger
        self.since: float | None = None  # when it started, while it lasts

    def failed(self, fault: BaseException) -> float:
        """A read failed for the database's sake: how long the outage has lasted (0 when
        it starts now)."""
        now = self.clock()
        if self.since is None:
            self.since = now
            said = str(fault) if isinstance(fault, InfrastructureFault) else describe(fault)
            self.log.warning("%s: %s; retrying", self.who, said)
        return now - self.since

    def over(self) -> None:
        """A read worked: an outage in course has ended."""
        if self.since is not None:
            self.since = None
            self.log.warning("%s: the database is back; goes on", self.who)


def is_infrastructure(exc: BaseException) -> bool:
    if isinstance(exc, InfrastructureFault):
        return True
    return isinstance(exc, INFRASTRUCTURE_ERRORS) and not _is_rule_break(exc)


def _is_rule_break(exc: BaseException) -> bool:
    # psycopg maps e.g. a serialization failure or a deadlock to OperationalError too; they
    # are worth a retry as well, so nothing is excluded today. Kept as the one place to
    # refine the rule (e.g. SQLite's "no such table" is an OperationalError and a bug).
    return isinstance(exc, DatabaseError) and "no such table" in str(exc)


def discard_connections() -> None:
    """Close this thread's database connections after a fault: Django would otherwise
    keep handing out a connection whose server side is gone. The next query reconnects."""
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except Exception:  # already broken: closing it is all that was wanted
            log.debug("closing a broken connection failed", exc_info=True)


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    """Wrap a database call: an infrastructure error closes the thread's
    connections and is raised as InfrastructureFault (everything else passes through)."""

    @wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except InfrastructureFault:
            raise
        except Exception as exc:
            if not is_infrastructure(exc):
                raise
            discard_connections()
            raise InfrastructureFault(exc) from exc

    return call


# -- the health check's ping, skipped where it tells nothing -----------------------------
#
# With CONN_HEALTH_CHECKS (dashboard/settings.py), Django sends `SELECT 1` before the first
# query of every request on a thread (channels' database_sync_to_async marks the check due
# before and after each call). On the A2A doors that is one round trip to PostgreSQL more
# per call: a GetTask made four where it needs one. What the ping finds out is whether the
# server ended an idle connection (a restart, a terminated backend, an idle timeout); the
# server then says so on the socket (an error message, then the end of the stream), so a
# socket with nothing to read, on a connection that answered a call a moment ago, is one
# the ping would pass. Such a connection is taken as alive without the ping; any other
# (idle longer, or with something unread) is pinged as before. A connection that dies
# silently in that moment (a network cut) fails its call as one that dies just after the
# ping does: -32603 / HTTP 503, the connection closed, the next call on a new one.

FRESH_SECONDS = 1.0  # a connection that answered this recently may skip the ping
_served = threading.local()  # .at: when this thread's connection last finished a call


def skip_ping_if_alive() -> None:
    """Mark this thread's health check done when its connection finished a call less than
    FRESH_SECONDS ago and its socket holds nothing unread (see above). Call it after
    `close_old_connections()`, before the call's first query."""
    conn = connection
    raw = conn.connection
    if raw is None or not conn.health_check_enabled or conn.health_check_done:
        return
    if time.monotonic() - getattr(_served, "at", float("-inf")) >= FRESH_SECONDS:
        return
    if conn.vendor == "postgresql" and _unread(raw):
        return  # the server said something while the connection was idle: ping as before
    conn.health_check_done = True


def note_served() -> None:
    """This thread's connection just finished a call."""
    _served.at = time.monotonic()


def _unread(raw: Any) -> bool:
    try:
        fd = raw.pgconn.socket
    except Exception:  # closed or broken: let the ping find out
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


def with_fresh_connection(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` in a worker thread as channels' database_sync_to_async runs it (old
    connections closed before and after), without the ping when `skip_ping_if_alive`
    allows it."""

    @wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T:
        close_old_connections()
        skip_ping_if_alive()
        try:
            return fn(*args, **kwargs)
        finally:
            if connection.connection is not None:
                note_served()
            close_old_connections()

    return call


def in_thread(fn: Callable[..., T]) -> Callable[..., Any]:
    """`fn` as an awaitable run on the thread pool (thread_sensitive=False), with
    `with_fresh_connection`'s connection handling: what the A2A doors use in place of
    channels' database_sync_to_async, so each door skips the same ping the same way."""
    return sync_to_async(with_fresh_connection(fn), thread_sensitive=False)
