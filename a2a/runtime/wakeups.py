"""Listens to task events (in the writer's transaction) and queues a run when a task becomes
runnable: created, answered, resumed to work, or given a new user message.

The job row is written in the same transaction as the change (the database backend shares
the connection), so a committed wakeup always has its job and a rolled-back one never does.
A backend outside the database (RQ, Redis) would enqueue on commit instead; the scheduler's
sweep of wanted-but-idle leases covers the gap either way.
"""

from __future__ import annotations

from a2a.event_kinds import EventKind, is_user_message
from a2a.lifecycle import State
from a2a.models import TaskEvent
from a2a.runtime import leases


def on_task_event(event: TaskEvent) -> None:
    if event.kind != EventKind.RESUMED and not is_user_message(event.kind, event.data):
        return  # the agent's own output wakes nobody
    if event.to_state not in (State.SUBMITTED, State.WORKING):
        return  # e.g. resumed back to input-required: waits for its answer, not for a worker
    leases.want(event.task_id)
    enqueue(event.task_id)


def enqueue(task_id: str) -> None:
    from a2a.runtime.jobs import run_task

    run_task.enqueue(task_id)
