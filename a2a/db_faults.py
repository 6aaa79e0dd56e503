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
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connections

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
