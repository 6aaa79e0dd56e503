"""Blocking sends: wait until the agent has nothing more to do for now.

A task is settled when it reached a state where it waits for someone else (terminal,
input-required, auth-required, paused), or when no worker holds it and every wakeup has
been served (the agent ran and left it working, e.g. a long-lived conversation). Waiting
happens in the event loop, never in a request thread: announcements of the task wake it
(each event, and the worker's release of the task, executor.run), over Redis or, with the
in-memory layer, relayed from the workers by local wake-ups (a2a.notify). The poll is the
fallback for a lost announcement (a Redis outage): it costs a waiting send two queries.

The doors ask through the core's seam (a2a.work), which this runtime answers with these
two functions (RuntimeConfig.ready()); hosted ACP agents' turns keep the same leases.
"""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async

from a2a import conf
from a2a.lifecycle import PAUSED, TERMINAL, WAITING_FOR_INPUT
from a2a.notify import Listener, group_name
from a2a.prepared import Prepared
from a2a.runtime import inline, leases
from a2a.runtime.models import RunLease

STOPPED = TERMINAL | WAITING_FOR_INPUT | PAUSED
POLL = 0.5  # seconds; only the fallback (it was the way to learn of the answer, at 0.1 s)


_LEASE = Prepared(
    lambda task: RunLease.objects.filter(task_id=task).values_list("owner", "wakeups", "served"),
    "task",
)


def settled(task_id: str) -> bool:
    row = leases.STATE.first(task=task_id)
    if row is None or row[0] in STOPPED:
        return True
    lease = _LEASE.first(task=task_id)
    if lease is None:
        return False
    owner, wakeups, served = lease
    return not owner and wakeups == served


async def until_settled(task_id: str, timeout: float | None = None) -> bool:
    """True if the task settled within `timeout` seconds (TASKDECK BLOCKING_SEND_SECONDS).
    A run of the task in this process (an inline agent's, a2a.runtime.inline) is waited
    for itself first: no announcement or poll needed unless work is left after it."""
    if timeout is None:
        timeout = conf.TASKDECK.blocking_send_seconds
    check = database_sync_to_async(settled, thread_sensitive=False)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if (run := inline.running(task_id)) is not None:
        if not await inline.wait(run, timeout):
            return False
        if await check(task_id):
            return True
    news = Listener(group_name(task_id))  # survives a Redis outage: a send must not 500
    try:
        await news.join()
        while True:
            if await check(task_id):
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await news.wait(min(POLL, remaining))
    finally:
        await news.leave()
