"""Quick agents run in the process that took the blocking send, not on a worker.

Why: a blocking send otherwise pays for a hand-off twice — a job row, a doorbell, a
worker's claim, then an announcement back to the web process that waits — and the two
workers of `make run` run one slice at a time each, so sixteen callers queue behind them.
The a2a-sdk runs its executor inside the request; an agent that declares `INLINE = True`
(registry.Agent.inline: it answers, asks or parks within moments) gets the same here.

What stays: the run is the runtime's ordinary slice (a2a.runtime.executor), under the
ordinary lease. The lease is taken in the creating transaction, owned by this process,
and no job is queued; the slice heartbeats it like a worker. If this process dies, the
lease expires (TASKDECK_LEASE_SECONDS) and the scheduler hands the run to a worker, which
replays it with its recorded steps (no step runs twice). Anything later in the task's life
(a follow-up message, a resume) goes to the workers as before.

Only a task *created* by a blocking or streaming send is taken (`wanted()` around the
call, which the A2A door asks for through the core's seam, a2a.work.may_run_here): a
blocking send then waits for this run instead of for announcements (a2a.runtime.settle
finds it `running`); a streaming send follows its events. The run is
queued on the event loop as the call's thread finishes (`wanted`), whatever the caller
does next.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from asgiref.sync import SyncToAsync
from django.db import transaction
from django.utils import timezone

from a2a import conf
from a2a.runtime import faults, leases, registry

log = logging.getLogger(__name__)

# The task ids a blocking send created and took to run here (None: not in such a call).
_TAKEN: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "taskdeck_inline_taken", default=None
)
# Runs in flight in this process, by task id: for the send to wait on, and kept so that the
# event loop does not drop (garbage-collect) a run whose caller hung up.
_RUNNING: dict[str, asyncio.Task] = {}


@contextmanager
def wanted() -> Iterator[list[str]]:
    """Around a blocking or streaming send's handler, in its thread: a task it creates for
    an inline agent is taken to run here. The list it yields names the taken tasks whose
    creation committed; when the block ends, their runs are queued on the event loop that
    handed this thread the call (`_schedule`) — after the handler, so a stream's first
    snapshot is read before the run can change the task, and before the call returns to
    the loop, so a caller who hangs up meanwhile (its view cancelled) cannot leave a run
    unstarted."""
    taken: list[str] = []
    token = _TAKEN.set(taken)
    try:
        yield taken
    finally:
        _TAKEN.reset(token)
        for task_id in taken:
            _schedule(task_id)


def starts_at_once(skill: str) -> bool:
    """Would a task of `skill` created now be taken to run here (`take`)? A blocking or
    streaming send wants it (`wanted`), inline runs are on, and the skill's agent is
    inline. The core asks before creating the task (a2a.work.starts_at_once): such a task
    is created started (`working`), its `started` event in the creating transaction
    instead of one of its own when the run begins."""
    if _TAKEN.get() is None or not conf.RUNTIME.inline:
        return False
    agent = registry.get(skill)
    return agent is not None and agent.inline


def take(task_id: str, skill: str) -> bool:
    """Called for a new task inside its creating transaction (a2a.runtime.wakeups): if a
    blocking send wants it and its agent is inline (`starts_at_once`), write its lease as
    held by this process (one slice claimed, no job) and return True; else False (queue a
    job)."""
    taken = _TAKEN.get()
    if taken is None or not starts_at_once(skill):
        return False
    now = timezone.now()
    leases.NEW.insert(
        task_id=task_id,
        owner=leases.WORKER_ID,
        expires_at=now + timedelta(seconds=leases.lease_seconds()),
        wakeups=1,
        enqueued_at=now,
        slices=1,
    )
    transaction.on_commit(lambda: taken.append(task_id))
    return True


def _schedule(task_id: str) -> None:
    """In the call's thread: start the run on the event loop that handed this thread the
    call. It is queued on that loop before the call's own return (asyncio runs callbacks
    in order), so the send finds it running. Outside a served loop (a script) nothing
    starts: the lease expires and a worker runs it. The loop is asgiref's private
    `SyncToAsync.threadlocal` (docs/upgrading.md)."""
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    pid = getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None)
    if loop is not None and pid == os.getpid() and loop.is_running():
        loop.call_soon_threadsafe(_start, task_id)
    else:
        log.warning("task %s was taken to run inline outside a served event loop", task_id)


def _start(task_id: str) -> None:
    run = _RUNNING[task_id] = asyncio.ensure_future(_run(task_id))
    run.add_done_callback(lambda _: _RUNNING.pop(task_id, None))


def running(task_id: str) -> asyncio.Task | None:
    """The task's run in this process, while it runs."""
    return _RUNNING.get(task_id)


async def wait(run: asyncio.Task, timeout: float) -> bool:
    """Wait for `run`, at most `timeout` seconds: True if it ended in time. It goes on
    after the timeout or a hang-up (the send then answers with the task as it is, as
    when a worker runs it)."""
    try:
        await asyncio.wait_for(asyncio.shield(run), timeout)
    except TimeoutError:
        return False
    return True


async def _run(task_id: str) -> str:
    """One slice under the lease `take` wrote, then the lease back. A wakeup that landed
    meanwhile (a message, a resume) is the workers' to serve: a job is queued for it."""
    from a2a.runtime import executor  # the executor imports the agents

    token = faults.POOLED.set(True)  # this loop's pooled threads keep their connections
    give_back = executor.GiveBack(served=1)
    try:
        try:
            outcome = await executor.run_slice(task_id, fresh=True, give_back=give_back)
        except Exception as exc:
            if faults.is_infrastructure(exc):
                return await asyncio.to_thread(executor.retry_later, task_id, exc)
            log.exception("inline slice of task %s failed", task_id)
            await faults.in_db_thread(leases.release)(task_id, None)
            return "failed; the scheduler will run it again"
        if not give_back.given:  # the slice did not complete the task
            await faults.in_db_thread(_give_back)(task_id)
        return outcome
    finally:
        faults.POOLED.reset(token)


def _give_back(task_id: str) -> None:
    """The lease back, then a job for a wakeup that landed meanwhile or the release's
    announcement: one hop to a pooled thread for both (each hop costs a thread switch
    on the busiest path, a blocking send's)."""
    from a2a.runtime import executor, wakeups

    if leases.release(task_id, 1):
        wakeups.enqueue(task_id)
    else:
        executor.announce_release(task_id)
