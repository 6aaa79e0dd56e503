"""Runs an agent for one task: claim the lease, replay the run with its recorded steps,
watch for pauses and cancels while it runs, then complete, fail or just stop.

The a2a-sdk's AgentExecutor is the model: the executor knows the agent, `a2a.services`
knows the task, the job queue knows nothing of either.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import close_old_connections, transaction
from django.utils import timezone

from a2a import conf, notify, selectors, services
from a2a.errors import TaskError, TaskNotFound, TransitionRefused
from a2a.formats import text_of
from a2a.lifecycle import TERMINAL, State
from a2a.models import Suspension, Task
from a2a.prepared import Prepared
from a2a.runtime import faults, leases, registry, wakeups
from a2a.runtime.context import (
    IDLE,
    AgentContext,
    NonDeterministicReplay,
    Reply,
    ResumeInfo,
    Stop,
)
from a2a.runtime.models import RunLease, StepRecord

log = logging.getLogger(__name__)


def run(task_id: str) -> str:
    """Run slices until the task stops or belongs to someone else. Returns what happened.

    An infrastructure fault (faults.py) anywhere in a slice gives the run back for a retry
    with backoff; the job itself ends normally — the work is not lost, only postponed."""
    outcome = "not runnable or held by another worker"
    while True:
        close_old_connections()
        try:
            served = leases.claim(task_id)
            if served is None:
                return outcome
            give_back = GiveBack(served)
            outcome = asyncio.run(run_slice(task_id, give_back=give_back))
            if give_back.given:  # with the completion, and announced
                return outcome
            if not leases.release(task_id, served):
                announce_release(task_id)
                return outcome
        except Exception as exc:
            if faults.is_infrastructure(exc):
                return retry_later(task_id, exc)
            log.exception("slice of task %s failed", task_id)
            leases.release(task_id, None)  # the scheduler will try again
            raise


def announce_release(task_id: str) -> None:
    """A run let the task go. A blocking send waits for this too (a2a.runtime.settle): an
    agent that leaves the task working (a conversation) writes no event to wake it."""
    notify.send(notify.group_name(task_id), {"type": "task.released"})


# Waits (seconds) before each attempt to hand a faulted run back: the database that just
# failed may need a moment. If it stays away, the lease expires and the scheduler retries.
HANDBACK_DELAYS = (0.0, 0.25, 0.5, 1.0, 2.0)


def retry_later(task_id: str, exc: BaseException) -> str:
    """Give a run that met an infrastructure fault back, to be retried after a backoff:
    the lease is freed, the fault counted and put on the task's timeline, and one
    deferred job queued (in one transaction, so a retry is never lost or doubled)."""
    cause = exc.cause if isinstance(exc, faults.InfrastructureFault) else exc
    error = faults.describe(cause)
    log.warning("task %s: infrastructure fault, will retry: %s", task_id, error)
    for delay in HANDBACK_DELAYS:
        time.sleep(delay)
        faults.discard_connections()
        try:
            return _hand_back(task_id, error)
        except Exception as again:
            if not faults.is_infrastructure(again):
                raise
    faults.discard_connections()
    log.error("task %s: database still away; the scheduler retries when the lease expires", task_id)
    return f"fault, not handed back (database away): {error}"


def _hand_back(task_id: str, error: str) -> str:
    with transaction.atomic():
        lease = RunLease.objects.select_for_update().filter(task_id=task_id).first()
        if lease is None or lease.owner not in ("", leases.WORKER_ID):
            return f"fault ({error}); the run is another worker's now"
        lease.faults += 1
        runtime = conf.RUNTIME
        delay = min(runtime.retry_seconds * 2 ** (lease.faults - 1), runtime.retry_max_seconds)
        retry_at = timezone.now() + timedelta(seconds=delay)
        lease.owner, lease.expires_at = "", None
        lease.save(update_fields=["owner", "expires_at", "faults"])
        services.note_retry(
            task_id, actor=services.Actor("agent", "runtime"), attempt=lease.faults,
            retry_at=retry_at, error=error,
        )  # fmt: skip
        wakeups.enqueue(task_id, run_after=retry_at)
    return f"fault {lease.faults} in a row ({error}); retrying in {delay:.1f} s"


# The version of a task created started (its `created` and `started` events), untouched
CREATED_STARTED = 2

# A slice's reads, compiled once (a2a/prepared.py): every run starts with them.
_STEPS = Prepared(lambda task: StepRecord.objects.filter(task_id=task), "task")
_LAST_RESUMED = Prepared(
    lambda task, ending: Suspension.objects.filter(task_id=task, ending=ending).order_by(
        "-ended_at", "-id"
    )[:1],
    "task",
    "ending",
)


def _snapshot(
    task_id: str, fresh: bool = False
) -> tuple[Task, dict[int, StepRecord], list[dict], ResumeInfo | None]:
    """The task (started if it was submitted), its recorded steps, its transcript and how
    its last pause ended. `fresh`: the caller created it moments ago (an inline run),
    started with its creation (a2a.services.create_task): at that version (2: created,
    started) it never ran and was never paused, so it has no steps and no suspension to
    read."""
    close_old_connections()
    task = selectors.task_row(task_id)
    if task is None:
        raise Task.DoesNotExist(task_id)
    first = fresh and (
        task.state == State.SUBMITTED
        or (task.state == State.WORKING and task.version == CREATED_STARTED)
    )
    if task.state == State.SUBMITTED:
        task = _start(task_id, task.skill)
    steps = {} if first else {s.seq: s for s in _STEPS.fetch(task=task_id)}
    transcript = [
        {**_message(m.role, m.parts), "messageId": m.message_id} for m in selectors.history(task_id)
    ]
    last = None
    if not first:
        last = _LAST_RESUMED.first(task=task_id, ending=Suspension.Ending.RESUMED.value)
    resume = None
    if last is not None:
        previous = State.PAUSED_BY_AGENT if last.initiator == "agent" else State.PAUSED_BY_CLIENT
        resume = ResumeInfo.of(last, previous)
        if task.state == State.WORKING:  # taken after a resume: no longer waiting for a worker
            task = services.note_pickup(task_id, actor=services.Actor("agent", "runtime")) or task
    return task, steps, transcript, resume


class NothingToDo(Exception):
    """The task is no longer runnable: the slice ends without running the agent."""


def _start(task_id: str, skill: str) -> Task:
    """Start a task read as submitted. The read was not under the task's lock (no lock is
    held across a slice's reads), so a cancel, a pause or a rejection may have committed
    since: the start is then refused under the lock, and the run has nothing to do — not
    an error, and not a failed job (the change that stopped it woke whoever waits)."""
    try:
        return services.start_task(task_id, actor=services.Actor("agent", skill))
    except TransitionRefused as refused:
        raise NothingToDo(f"task is {refused.state.value}") from None
    except TaskNotFound:
        raise Task.DoesNotExist(task_id) from None


def _message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    data = [p["data"] for p in parts if p.get("kind") == "data"]
    return {"role": role, "text": text_of(parts), "data": data}


def _watch_state(task_id: str) -> tuple[str, str]:
    row = Task.objects.filter(pk=task_id).values_list("state", "current_suspension__mode").first()
    return (row[0], row[1] or "") if row else (State.CANCELED, "")


async def _watch(
    task_id: str, runner: asyncio.Task, why: list[str], fault: list[BaseException]
) -> None:
    """Cancel the run when the task is canceled or failed, paused with
    interrupt_immediate, or the lease was lost; keep the lease alive meanwhile. A database
    that stops answering is ridden out for up to a third of the lease (the run then gives
    up and is retried: it could not prove it still owns the task)."""
    poll, beat_every = conf.RUNTIME.poll_seconds, leases.lease_seconds() / 3
    heartbeat = faults.in_db_thread(leases.heartbeat)
    watch_state = faults.in_db_thread(_watch_state)
    loop = asyncio.get_running_loop()
    last_beat = loop.time()
    while not runner.done():
        await asyncio.sleep(poll)
        try:
            if loop.time() - last_beat >= beat_every:
                if not await heartbeat(task_id):
                    why.append("lease lost")
                    runner.cancel()
                    return
                last_beat = loop.time()
            state, mode = await watch_state(task_id)
        except faults.InfrastructureFault as exc:
            if loop.time() - last_beat < beat_every * 2:
                continue  # try again at the next poll; the connection was reset
            why.append("database unreachable")
            fault.append(exc)
            runner.cancel()
            return
        if state in TERMINAL:
            why.append(f"task {state}")
            runner.cancel()
            return
        if state == State.PAUSED_BY_CLIENT and mode == Suspension.Mode.INTERRUPT_IMMEDIATE:
            why.append("paused (interrupt_immediate)")
            runner.cancel()
            return


@dataclass
class GiveBack:
    """A slice's lease, to be given back (served `served` wakeups) in the transaction of
    the slice's completion, when it completes the task: one transaction and one thread
    hop less per run (on SQLite one turn of the write lock less), the release announced
    from the same hop. A completed task is not runnable, so no wakeup can ask for another
    slice of it. `given` tells the caller whether it happened; if not (the slice ended
    otherwise), the caller releases the lease as before."""

    served: int
    given: bool = False


def _finish(
    task_id: str, actor: services.Actor, value: Any, give_back: GiveBack | None = None
) -> str:
    if value is IDLE:
        return "idle: waiting for the next message"
    text = value if isinstance(value, str) else None
    release = None
    if give_back is not None:
        release = functools.partial(leases.release_here, task_id, give_back.served)
    try:  # the services read the task under its lock: no read of ours before
        services.complete_task(
            task_id, actor=actor, text=text, reply_only=isinstance(value, Reply), also=release
        )
    except TransitionRefused:
        state = Task.objects.filter(pk=task_id).values_list("state", flat=True).first()
        return f"stopped before completing: task is {state}"
    if give_back is not None:  # committed: the lease is back
        give_back.given = True
        announce_release(task_id)
    return "completed"


def _fail(task_id: str, actor: services.Actor, exc: BaseException) -> str:
    reason = f"{type(exc).__name__}: {exc}"[:2000]
    try:
        services.fail_task(task_id, actor=actor, reason=reason)
    except (TransitionRefused, TaskError):
        return f"agent error while the task was not working: {reason}"
    return f"failed: {reason}"


async def run_slice(task_id: str, *, fresh: bool = False, give_back: GiveBack | None = None) -> str:
    """One slice of a run whose lease the caller holds: the agent from the top (recorded
    steps replayed), watched for pauses and cancels, then finished, failed or stopped.
    `give_back`: the lease goes back with the completion, if the slice completes the task
    (`GiveBack`)."""
    try:
        task, steps, transcript, resume = await faults.in_db_thread(_snapshot)(task_id, fresh)
    except Task.DoesNotExist:
        return "task no longer exists"
    except NothingToDo as nothing:
        return f"nothing to do: {nothing}"
    actor = services.Actor("agent", task.skill or "agent")
    agent = registry.get(task.skill)
    if agent is None:
        await faults.in_db_thread(services.fail_task)(
            task_id, actor=actor, reason=f"no agent is registered for skill {task.skill!r}"
        )
        return "failed: unknown skill"
    ctx = AgentContext(task, steps=steps, transcript=transcript, resume=resume)
    runner = asyncio.ensure_future(agent.run(ctx))
    why: list[str] = []
    fault: list[BaseException] = []
    watcher = asyncio.ensure_future(_watch(task_id, runner, why, fault))
    try:
        value = await runner
    except Stop as stop:
        _raise_fault(ctx, fault)
        return f"stopped: {stop.why}"
    except asyncio.CancelledError:
        if runner.cancelled():
            _raise_fault(ctx, fault)
            return f"interrupted: {', '.join(why) or 'canceled'}"
        raise
    except NonDeterministicReplay as exc:
        return await faults.in_db_thread(_fail)(task_id, actor, exc)
    except Exception as exc:
        _raise_fault(ctx, fault)
        log.exception("agent %s failed on task %s", task.skill, task_id)
        return await faults.in_db_thread(_fail)(task_id, actor, exc)
    else:
        _raise_fault(ctx, fault)
        return await faults.in_db_thread(_finish)(task_id, actor, value, give_back)
    finally:
        watcher.cancel()


def _raise_fault(ctx: AgentContext, fault: list[BaseException]) -> None:
    """The slice met an infrastructure fault (a runtime call of the agent's, or the
    watcher): whatever the agent did with it, the run is retried, never failed."""
    if ctx.fault is not None:
        raise ctx.fault
    if fault:
        raise fault[0]
