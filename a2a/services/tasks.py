"""Creating tasks, messages and artifacts, and the plain moves of the A2A lifecycle:
start, complete, fail, reject, cancel."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from a2a.errors import NotAllowedNow, ValidationFailed
from a2a.input_requests import RESPONSE_TYPE, find_data_part
from a2a.lifecycle import Action, State, move
from a2a.models import Artifact, Message, Suspension, Task
from a2a.services._core import (
    Actor,
    IncomingMessage,
    append_message,
    lock,
    now,
    record,
    set_state,
)


def create_task(
    message: IncomingMessage,
    *,
    actor: Actor,
    skill: str,
    context_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Task:
    """A new `submitted` task holding the client's first message."""
    at = now()
    with transaction.atomic():
        task = Task.objects.create(
            context_id=context_id or str(uuid.uuid4()),
            skill=skill,
            state=State.SUBMITTED,
            status_timestamp=at,
            metadata=metadata or {},
            created_by=str(actor),
            created_at=at,
            updated_at=at,
            version=0,
        )
        msg = append_message(task, message, at)
        record(task, "created", actor, at, from_state="", data={"messageSeq": msg.seq})
    return task


def add_message(task_id: str, message: IncomingMessage, *, actor: Actor) -> Task:
    """A client message to an existing task. Waiting tasks take it as their answer
    (see `inputs.provide_input`); submitted and working tasks append it to their history."""
    from a2a.services.inputs import provide_input

    with transaction.atomic():
        task = lock(task_id)
        state = State(task.state)
        if state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED):
            return provide_input(task_id, message, actor=actor)
        if state in (State.PAUSED_BY_CLIENT, State.PAUSED_BY_AGENT):
            raise NotAllowedNow(
                state, f"task is {state.value}; resume it (tasks/resume) before sending messages"
            )
        if state in (State.COMPLETED, State.FAILED, State.CANCELED, State.REJECTED):
            raise NotAllowedNow(
                state,
                f"task is {state.value} (terminal) and takes no more messages; "
                "start a new task with referenceTaskIds instead",
            )
        if find_data_part(message.parts, RESPONSE_TYPE) is not None:
            raise NotAllowedNow(
                state, f"task is {state.value} and has no open input request to answer"
            )
        at = now()
        msg = append_message(task, message, at)
        record(task, "message_added", actor, at, data={"messageSeq": msg.seq, "role": "user"})
    return task


def accepts_output(task: Task) -> bool:
    """May the agent still write output (text, progress, artifacts)? While working, and
    while a `wait_for_completion` pause lets the current turn finish."""
    if task.state == State.WORKING:
        return True
    susp = task.current_suspension
    return (
        task.state == State.PAUSED_BY_CLIENT
        and susp is not None
        and susp.mode == Suspension.Mode.WAIT_FOR_COMPLETION
    )


def _require_output_allowed(task: Task) -> None:
    if not accepts_output(task):
        raise NotAllowedNow(State(task.state), f"task is {task.state}; it takes no agent output")


def emit_text(task_id: str, text: str, *, actor: Actor) -> Message:
    """An agent message: appended to the history and shown as the task's status message."""
    with transaction.atomic():
        task = lock(task_id)
        _require_output_allowed(task)
        at = now()
        msg = _agent_message(task, text, at)
        task.status_message = msg
        record(
            task,
            "message_added",
            actor,
            at,
            data={"messageSeq": msg.seq, "role": "agent"},
            fields=("status_message",),
        )
    return msg


def report_progress(task_id: str, done: int, total: int, *, actor: Actor) -> Task:
    if not (0 <= done <= total) or total <= 0:
        raise ValidationFailed({"progress": ["needs 0 <= done <= total and total > 0"]})
    with transaction.atomic():
        task = lock(task_id)
        _require_output_allowed(task)
        task.progress = {"done": done, "total": total}
        record(task, "progress", actor, now(), data=dict(task.progress), fields=("progress",))
    return task


def _agent_message(task: Task, text: str | None, at, extra_parts=()) -> Message | None:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"kind": "text", "text": text})
    parts.extend(extra_parts)
    if not parts:
        return None
    return append_message(
        task, IncomingMessage(message_id=str(uuid.uuid4()), parts=parts, role="agent"), at
    )


def _simple_move(
    task_id: str,
    action: Action,
    kind: str,
    *,
    actor: Actor,
    reason: str = "",
    text: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Task:
    with transaction.atomic():
        task = lock(task_id)
        target = move(task.state, action).to
        at = now()
        fields = ["state", "status_timestamp"]
        msg = _agent_message(task, text, at)
        if msg is not None:
            task.status_message = msg
            fields.append("status_message")
        previous = set_state(task, target, at)
        data = {"messageSeq": msg.seq} if msg is not None else {}
        data.update(extra or {})
        record(
            task,
            kind,
            actor,
            at,
            from_state=previous,
            reason=reason,
            data=data,
            fields=tuple(fields),
        )
    return task


def start_task(task_id: str, *, actor: Actor, text: str | None = None) -> Task:
    return _simple_move(task_id, Action.START, "started", actor=actor, text=text)


def complete_task(
    task_id: str, *, actor: Actor, text: str | None = None, reply_only: bool = False
) -> Task:
    """`reply_only`: the agent answered with a message rather than doing tracked work; A2A
    clients that asked with message/send get that Message back instead of the Task."""
    extra = {"replyOnly": True} if reply_only else None
    return _simple_move(task_id, Action.COMPLETE, "completed", actor=actor, text=text, extra=extra)


def fail_task(task_id: str, *, actor: Actor, reason: str, text: str | None = None) -> Task:
    return _simple_move(
        task_id, Action.FAIL, "failed", actor=actor, reason=reason, text=text or reason
    )


def reject_task(task_id: str, *, actor: Actor, reason: str, text: str | None = None) -> Task:
    return _simple_move(
        task_id, Action.REJECT, "rejected", actor=actor, reason=reason, text=text or reason
    )


def cancel_task(task_id: str, *, actor: Actor, reason: str = "") -> Task:
    """Cancel from any non-terminal state. An open suspension ends as `canceled`
    (which also clears a Bindu checkpoint) and an open input request is withdrawn."""
    with transaction.atomic():
        task = lock(task_id)
        target = move(task.state, Action.CANCEL).to
        at = now()
        data: dict[str, Any] = {}
        susp = task.current_suspension
        if susp is not None:
            Suspension.objects.filter(pk=susp.pk).update(
                ending=Suspension.Ending.CANCELED, ended_at=at, ended_by=str(actor)
            )
            data["handle"] = susp.handle
        if task.input_request:
            data["withdrawnRequestId"] = task.input_request.get("requestId")
        task.current_suspension = None
        task.input_request = None
        previous = set_state(task, target, at)
        record(
            task,
            "canceled",
            actor,
            at,
            from_state=previous,
            reason=reason,
            data=data,
            fields=("state", "status_timestamp", "current_suspension", "input_request"),
        )
    return task


def add_artifact(
    task_id: str,
    *,
    actor: Actor,
    parts: list[dict[str, Any]],
    name: str = "",
    description: str = "",
    artifact_id: str | None = None,
    append: bool = False,
    metadata: dict[str, Any] | None = None,
) -> Artifact:
    """Add an artifact (or extend one with `append=True`) to a working task."""
    with transaction.atomic():
        task = lock(task_id)
        _require_output_allowed(task)
        at = now()
        artifact_id = artifact_id or str(uuid.uuid4())
        existing = task.artifacts.filter(artifact_id=artifact_id).first()
        parts_from = len(existing.parts) if existing is not None and append else 0
        if existing is not None and append:
            existing.parts = [*existing.parts, *parts]
            existing.updated_at = at
            existing.save(update_fields=["parts", "updated_at"])
            artifact = existing
        elif existing is not None:
            raise NotAllowedNow(State(task.state), f"artifact {artifact_id!r} exists")
        else:
            seq = task.artifacts.count() + 1
            artifact = Artifact.objects.create(
                task=task,
                seq=seq,
                artifact_id=artifact_id,
                name=name,
                description=description,
                parts=parts,
                metadata=metadata or {},
                created_at=at,
                updated_at=at,
            )
        record(
            task,
            "artifact_added",
            actor,
            at,
            data={
                "artifactId": artifact_id,
                "append": bool(existing and append),
                "partsFrom": parts_from,
                "partsCount": len(parts),  # the parts this event added, no more
            },
        )
    return artifact
