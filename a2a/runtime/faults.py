"""The line between the agent failing and the infrastructure failing.

Temporal's rule: an infrastructure error retries the work; only the agent's own decision
fails a task. Here the infrastructure is Taskdeck's database (a restart, a failover, a
terminated backend) and its channel layer. Errors of those, met by the runtime's own
calls (loading the run, recording a step, a heartbeat, completing), release the run for a
retry with backoff and leave an entry on the task's timeline; exceptions raised by the
agent's code — its steps included — fail the task as before.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError, InterfaceError, OperationalError, connections

log = logging.getLogger(__name__)

T = TypeVar("T")

# What a lost or refused connection raises. Not IntegrityError, DataError or
# ProgrammingError: those are bugs or rule breaks, and retrying would repeat them.
INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class InfrastructureFault(Exception):
    """A runtime call failed for a reason outside the agent (see the module docstring).

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
    """Wrap a runtime database call: an infrastructure error closes the thread's
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


# True while a run executes inside a web process (a2a.runtime.inline): its database calls
# then go to the event loop's pooled threads, which keep their connections, instead of
# asgiref's one sync thread (a worker's; in a web process it would queue every inline run
# and the sockets' reads behind each other).
POOLED: contextvars.ContextVar[bool] = contextvars.ContextVar("taskdeck_pooled", default=False)


def in_db_thread(fn: Callable[..., T]) -> Callable[..., Any]:
    """`fn` as a coroutine function, run in asgiref's single sync thread — the one that
    holds a run's connection — or, for an inline run (POOLED), in a pooled thread; with
    `guarded`'s fault handling either way."""
    single = sync_to_async(guarded(fn), thread_sensitive=True)
    pooled = sync_to_async(guarded(fn), thread_sensitive=False)

    async def call(*args: Any, **kwargs: Any) -> Any:
        return await (pooled if POOLED.get() else single)(*args, **kwargs)

    return call
