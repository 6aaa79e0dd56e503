"""Re-run an ended task, or retry a failed one from its failed step (issue 29).

Both make a *new* task: a terminal state stays terminal, as every A2A client that saw it
read it (docs/design/task-states.md), and the new task is linked both ways (`rerun_of` on
it, `reruns` on the original). The new task holds the same input — a copy of the client's
first message (its parts and metadata; `referenceTaskIds` names the original, as A2A links
related tasks), the task's metadata and skill — in the same context, so the conversation
and the board's context filter keep them together. It belongs to the original's owner
(the API client whose task it repeats sees it), and came in by the dashboard, titled
"Re-run of …" / "Retry of …". Later messages and answers are not replayed: the agent asks
again.

A retry also carries the failed run's recorded steps over (`a2a.work.carry_steps`, the
runtime's step journal), in the same transaction that creates the task and queues its run:
the run replays them and runs the rest, so no finished step runs twice.
"""

from __future__ import annotations

import uuid

from django.db import transaction

from a2a import skills, work
from a2a.errors import NotAllowedNow
from a2a.lifecycle import TERMINAL, State
from a2a.models import Message, Task
from a2a.services._core import Actor, IncomingMessage, Origin, lock
from a2a.services.tasks import create_task

RERUN = "rerun"
RETRY = "retry"


def refusal(task: Task, kind: str, steps: int | None = None) -> str:
    """Why `task` cannot be re-run (kind RERUN) or retried from its failed step (RETRY),
    or "" when it can. `steps`: its recorded steps, when the caller counted them."""
    state = State(task.state)
    if state not in TERMINAL:
        return f"task is {state.value}; only an ended task can be re-run (cancel it first)"
    if skills.HOSTED_TAG in ((skills.get(task.skill) or {}).get("tags") or ()):
        return (
            "a hosted ACP agent's task belongs to its session; send the session a new prompt "
            "instead"
        )
    if kind == RETRY:
        if state != State.FAILED:
            return f"task is {state.value}; only a failed task can be retried from its failed step"
        if not (steps if steps is not None else work.recorded_steps(task.id)):
            return "its run recorded no steps to retry from; re-run it instead"
    return ""


def latest_rerun(task_id: str) -> str:
    """The id of the newest re-run or retry of `task_id`, "" when none (the `rerun_of`
    index)."""
    found = (
        Task.objects.filter(rerun_of_id=task_id)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    return found or ""


def rerun_task(
    task_id: str, *, actor: Actor, kind: str = RERUN, seen_latest: str | None = None
) -> Task:
    """A new task repeating ended task `task_id` (module docstring); with kind RETRY,
    a failed task's recorded steps carried over. `seen_latest`: the newest re-run the
    caller's page showed ("" for none); when another was made since — a double click, a
    second operator — the request is refused instead of making one more (the original's
    row lock puts the two in order). Raises TaskNotFound, NotAllowedNow (with `refusal`'s
    sentence) or ValidationFailed (its agent is no longer offered); nothing is written
    then."""
    if kind not in (RERUN, RETRY):
        raise ValueError(kind)
    with transaction.atomic():
        original = lock(task_id, actor)  # two clicks at once: one after the other
        why = refusal(original, kind)
        if why:
            raise NotAllowedNow(State(original.state), why)
        if seen_latest is not None and (latest := latest_rerun(original.id)) != seen_latest:
            raise NotAllowedNow(
                State(original.state),
                f"it was re-run meanwhile as {latest}; open that task, or reload this page "
                "to run it once more",
            )
        first = Message.objects.filter(task_id=original.id).order_by("seq").first()
        message = IncomingMessage(
            message_id=f"{kind}-{uuid.uuid4()}",
            parts=first.parts if first else [{"kind": "text", "text": ""}],
            metadata=dict(first.metadata or {}) if first else {},
            reference_task_ids=[original.id],
        )
        label = "Re-run" if kind == RERUN else "Retry"
        task = create_task(
            message,
            actor=actor,
            skill=original.skill,
            context_id=original.context_id,
            metadata=original.metadata,
            origin=Origin(Task.Origin.DASHBOARD, title=f"{label} of {original.id[:8]}"),
            rerun_of=original,
            rerun_kind=kind,
        )
        if kind == RETRY:
            work.carry_steps(original.id, task.id)
    return task
