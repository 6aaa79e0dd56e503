"""Runs an agent for one task: claim the lease, replay the run with its recorded steps,
watch for pauses and cancels while it runs, then complete, fail or just stop.

The a2a-sdk's AgentExecutor is the model: the executor knows the agent, `a2a.services`
knows the task, the job queue knows nothing of either.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from a2a import services
from a2a.errors import TaskError, TransitionRefused
from a2a.formats import text_of
from a2a.lifecycle import TERMINAL, State
from a2a.models import Suspension, Task
from a2a.runtime import leases, registry
from a2a.runtime.context import (
    IDLE,
    AgentContext,
    NonDeterministicReplay,
    Reply,
    ResumeInfo,
    Stop,
)
from a2a.runtime.models import StepRecord

log = logging.getLogger(__name__)


def run(task_id: str) -> str:
    """Run slices until the task stops or belongs to someone else. Returns what happened."""
    outcome = "not runnable or held by another worker"
    while True:
        close_old_connections()
        served = leases.claim(task_id)
        if served is None:
            return outcome
        try:
            outcome = asyncio.run(_slice(task_id))
        except Exception:
            log.exception("slice of task %s failed", task_id)
            leases.release(task_id, None)  # the scheduler will try again
            raise
        if not leases.release(task_id, served):
            return outcome


def _snapshot(task_id: str) -> tuple[Task, dict[int, StepRecord], list[dict], ResumeInfo | None]:
    close_old_connections()
    task = Task.objects.get(pk=task_id)
    if task.state == State.SUBMITTED:
        task = services.start_task(task_id, actor=services.Actor("agent", task.skill))
    steps = {s.seq: s for s in StepRecord.objects.filter(task_id=task_id)}
    transcript = [
        {**_message(m.role, m.parts), "messageId": m.message_id}
        for m in task.messages.order_by("seq")
    ]
    last = (
        Suspension.objects.filter(task_id=task_id, ending=Suspension.Ending.RESUMED)
        .order_by("-ended_at", "-id")
        .first()
    )
    resume = None
    if last is not None:
        previous = State.PAUSED_BY_AGENT if last.initiator == "agent" else State.PAUSED_BY_CLIENT
        resume = ResumeInfo.of(last, previous)
    return task, steps, transcript, resume


def _message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    data = [p["data"] for p in parts if p.get("kind") == "data"]
    return {"role": role, "text": text_of(parts), "data": data}


def _watch_state(task_id: str) -> tuple[str, str]:
    row = Task.objects.filter(pk=task_id).values_list("state", "current_suspension__mode").first()
    return (row[0], row[1] or "") if row else (State.CANCELED, "")


async def _watch(task_id: str, runner: asyncio.Task, why: list[str]) -> None:
    """Cancel the run when the task is canceled or failed, paused with
    interrupt_immediate, or the lease was lost; keep the lease alive meanwhile."""
    cfg = settings.TASKDECK["RUNTIME"]
    poll, beat_every = float(cfg["POLL_SECONDS"]), leases.lease_seconds() / 3
    since_beat = 0.0
    while not runner.done():
        await asyncio.sleep(poll)
        since_beat += poll
        if since_beat >= beat_every:
            since_beat = 0.0
            if not await sync_to_async(leases.heartbeat, thread_sensitive=True)(task_id):
                why.append("lease lost")
                runner.cancel()
                return
        state, mode = await sync_to_async(_watch_state, thread_sensitive=True)(task_id)
        if state in TERMINAL:
            why.append(f"task {state}")
            runner.cancel()
            return
        if state == State.PAUSED_BY_CLIENT and mode == Suspension.Mode.INTERRUPT_IMMEDIATE:
            why.append("paused (interrupt_immediate)")
            runner.cancel()
            return


def _finish(task_id: str, actor: services.Actor, value: Any) -> str:
    if value is IDLE:
        return "idle: waiting for the next message"
    task = Task.objects.get(pk=task_id)
    if task.state != State.WORKING:
        return f"stopped before completing: task is {task.state}"
    text = value if isinstance(value, str) else None
    services.complete_task(task_id, actor=actor, text=text, reply_only=isinstance(value, Reply))
    return "completed"


def _fail(task_id: str, actor: services.Actor, exc: BaseException) -> str:
    reason = f"{type(exc).__name__}: {exc}"[:2000]
    try:
        services.fail_task(task_id, actor=actor, reason=reason)
    except (TransitionRefused, TaskError):
        return f"agent error while the task was not working: {reason}"
    return f"failed: {reason}"


async def _slice(task_id: str) -> str:
    try:
        task, steps, transcript, resume = await sync_to_async(_snapshot, thread_sensitive=True)(
            task_id
        )
    except Task.DoesNotExist:
        return "task no longer exists"
    actor = services.Actor("agent", task.skill or "agent")
    agent = registry.get(task.skill)
    if agent is None:
        await sync_to_async(services.fail_task, thread_sensitive=True)(
            task_id, actor=actor, reason=f"no agent is registered for skill {task.skill!r}"
        )
        return "failed: unknown skill"
    ctx = AgentContext(task, steps=steps, transcript=transcript, resume=resume)
    runner = asyncio.ensure_future(agent.run(ctx))
    why: list[str] = []
    watcher = asyncio.ensure_future(_watch(task_id, runner, why))
    try:
        value = await runner
    except Stop as stop:
        return f"stopped: {stop.why}"
    except asyncio.CancelledError:
        if runner.cancelled():
            return f"interrupted: {', '.join(why) or 'canceled'}"
        raise
    except NonDeterministicReplay as exc:
        return await sync_to_async(_fail, thread_sensitive=True)(task_id, actor, exc)
    except Exception as exc:
        log.exception("agent %s failed on task %s", task.skill, task_id)
        return await sync_to_async(_fail, thread_sensitive=True)(task_id, actor, exc)
    else:
        return await sync_to_async(_finish, thread_sensitive=True)(task_id, actor, value)
    finally:
        watcher.cancel()
