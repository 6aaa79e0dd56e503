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
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

# The line itself is drawn in the core (a2a.db_faults), where the doors use it too.
from a2a.db_faults import (  # noqa: F401 (the runtime's and the ACP host's names for them)
    INFRASTRUCTURE_ERRORS,
    InfrastructureFault,
    describe,
    discard_connections,
    guarded,
    is_infrastructure,
)

T = TypeVar("T")


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
