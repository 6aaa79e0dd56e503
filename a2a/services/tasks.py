"""Creating tasks, messages and artifacts, and the plain moves of the A2A lifecycle:
start, complete, fail, reject, cancel."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction

from a2a import access, rate_limits, work
from a2a.errors import NotAllowedNow, ValidationFailed
from a2a.event_kinds import EventKind
from a2a.input_requests import RESPONSE_TYPE, find_data_part
from a2a.lifecycle import TERMINAL, Action, State, move
from a2a.models import Artifact, Message, Suspension, Task, TaskEvent
from a2a.prepared import PreparedInsert
from a2a.services import checks, contexts
from a2a.services._core import (
    Actor,
    IncomingMessage,
    Origin,
    append_message,
    current_suspension,
    lock,
    now,
    record,
    set_state,
)
from a2a.validation import is_int

_NEW_TASK = PreparedInsert(Task)  # one per send, compiled once (a2a/prepared.py)


def create_task(
    message: IncomingMessage,
    *,
    actor: Actor,
    skill: str,
    context_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    origin: Origin | None = None,
    rerun_of: Task | None = None,
    rerun_kind: str = "",
) -> Task:
    """A new `submitted` task of a skill this Taskdeck offers, holding the client's first
    message (`working` when a send's handler runs it here at once: a2a.work.starts_at_once).
    Referenced tasks must exist; a given contextId must be new or one the actor may add
    to (a2a/services/contexts.py). `rerun_of`: the ended task this one repeats
    (`reruns.rerun_task`); the new task is that task's owner's, not the operator's."""
    message.checked()
    checks.skill(skill)
    checks.content_types(message.parts, skill)  # the skill's inputModes (A2A -32005)
    rate_limits.take("create", actor)  # per key and minute (429 at the doors)
    metadata = checks.mapping(metadata, "metadata")
    if context_id is not None:
        checks.identifier(context_id, "message.contextId")
    origin = origin or Origin("")
    if origin.door not in ("", *Task.Origin.values):
        raise ValidationFailed({"origin": [f"must be one of {', '.join(Task.Origin.values)}"]})
    checks.text(origin.title, "origin.title", limit=200)
    checks.text(origin.ref, "origin.ref", limit=checks.MAX_ID)
    refs = set(message.reference_task_ids)
    if refs:  # tasks the actor may not see are unknown, as if they did not exist
        found = set(
            access.visible(Task.objects.filter(pk__in=refs), actor).values_list("pk", flat=True)
        )
        if missing := sorted(refs - found):
            raise ValidationFailed({"message.referenceTaskIds": [f"unknown task {missing[0]!r}"]})
    at = now()
    # A blocking or streaming send whose agent runs in this process at once (an inline
    # agent, a2a.work.starts_at_once): the task is created started, its `started` event in
    # this transaction, not in one of its own when the run begins — on SQLite one turn of
    # the one write lock less per send (docs/production.md, "Started with its creation").
    at_once = work.starts_at_once(skill)
    # No savepoint inside a caller's transaction (a send's, which also writes the receipt):
    # nothing below is expected to fail, and what does fails the caller's transaction too,
    # whereas a savepoint costs two round trips on every send.
    with transaction.atomic(savepoint=False):
        if context_id is None:
            context_id = contexts.new(actor, at)
        else:  # another tenant's context is refused (a2a/services/contexts.py)
            contexts.join(context_id, actor, at)
        task = _NEW_TASK.insert(
            context_id=context_id,
            skill=skill,
            state=State.SUBMITTED,
            status_timestamp=at,
            metadata=metadata,
            created_by=str(actor),
            created_at=at,
            updated_at=at,
            version=1,  # its `created` event's
            origin=origin.door,
            origin_ref=origin.ref,
            origin_title=origin.title,
            owner=actor.tenant if rerun_of is None else rerun_of.owner,
            rerun_of=rerun_of,
            rerun_kind=rerun_kind,
        )
        msg = append_message(task, message, at, first=True)
        record(
            task, EventKind.CREATED, actor, at, from_state="", data={"messageSeq": msg.seq},
            created=msg,
        )  # fmt: skip
        if at_once:
            previous = set_state(task, move(task.state, Action.START).to, at)
            record(
                task, EventKind.STARTED, Actor("agent", skill), at, from_state=previous,
                fields=("state", "status_timestamp"),
            )  # fmt: skip
    return task


def add_message(task_id: str, message: IncomingMessage, *, actor: Actor) -> Task:
    """A client message to an existing task. Waiting tasks take it as their answer
    (see `inputs.provide_input`); submitted and working tasks append it to their history."""
    from a2a.services.inputs import provide_input

    message.checked()
    with transaction.atomic():
        task = lock(task_id, actor)
        checks.content_types(message.parts, task.skill)  # whatever the state, nothing written
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
        record(
            task, EventKind.MESSAGE_ADDED, actor, at, data={"messageSeq": msg.seq, "role": "user"}
        )
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
    checks.text(text, "text", limit=checks.MAX_TEXT, blank=False)
    with transaction.atomic():
        task = lock(task_id, actor)
        _require_output_allowed(task)
        at = now()
        msg = _agent_message(task, text, at)
        task.status_message = msg
        record(
            task,
            EventKind.MESSAGE_ADDED,
            actor,
            at,
            data={"messageSeq": msg.seq, "role": "agent"},
            fields=("status_message",),
        )
    return msg


PLAN_PRIORITIES = ("high", "medium", "low")
PLAN_STATUSES = ("pending", "in_progress", "completed")
MAX_PLAN_ENTRIES = 100


def _checked_plan(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A hosted ACP agent's plan entries, as ACP's `plan` has them (content, priority,
    status), each checked: the ACP door passes them on to editors as they are stored."""
    if not isinstance(plan, list) or len(plan) > MAX_PLAN_ENTRIES:
        raise ValidationFailed({"plan": [f"must be a list of at most {MAX_PLAN_ENTRIES} entries"]})
    out = []
    for i, entry in enumerate(plan):
        where = f"plan.{i}"
        if not isinstance(entry, dict):
            raise ValidationFailed({where: ["must be an object"]})
        checks.text(entry.get("content"), f"{where}.content", limit=2000)
        if entry.get("priority") not in PLAN_PRIORITIES:
            raise ValidationFailed({f"{where}.priority": [f"must be one of {PLAN_PRIORITIES}"]})
        if entry.get("status") not in PLAN_STATUSES:
            raise ValidationFailed({f"{where}.status": [f"must be one of {PLAN_STATUSES}"]})
        out.append({k: entry[k] for k in ("content", "priority", "status")})
    return out


def report_progress(
    task_id: str, done: int, total: int, *, actor: Actor, plan: list[dict[str, Any]] | None = None
) -> Task:
    """Progress `done` of `total`; with `plan`, the entries they count (a hosted ACP
    agent's plan), kept on the event for the ACP door."""
    if not (is_int(done) and is_int(total)) or not (0 <= done <= total) or total <= 0:
        raise ValidationFailed({"progress": ["needs 0 <= done <= total and total > 0"]})
    entries = _checked_plan(plan) if plan is not None else None
    with transaction.atomic():
        task = lock(task_id, actor)
        _require_output_allowed(task)
        task.progress = {"done": done, "total": total}
        data: dict[str, Any] = dict(task.progress)
        if entries is not None:
            data["plan"] = entries
        record(task, EventKind.PROGRESS, actor, now(), data=data, fields=("progress",))
    return task


def note_retry(
    task_id: str, *, actor: Actor, attempt: int, retry_at: datetime, error: str
) -> Task | None:
    """The run met an infrastructure fault (a lost database connection, a hung channel
    layer) and will be tried again at `retry_at`: a timeline entry, never a state change —
    the agent did not fail. Nothing is written for a task that has ended meanwhile."""
    with transaction.atomic():
        task = lock(task_id, actor)
        if task.state in TERMINAL:
            return None
        data = {"attempt": attempt, "retryAt": retry_at.isoformat(), "error": error[:500]}
        record(task, EventKind.RETRYING, actor, now(), reason=error[:500], data=data)
    return task


def note_pickup(task_id: str, *, actor: Actor) -> Task | None:
    """A worker took the run of a task that was resumed to work: a timeline entry, never a
    state change, that ends "resumed, waiting for a worker" (the live view's
    `waitingForWorkerSince`). Written once per resume: nothing when the task is not working
    or a worker already took its run since the latest resume. A read decides first, so a
    slice that has nothing to note takes no lock."""
    if not _awaits_pickup(task_id):
        return None
    with transaction.atomic():
        task = lock(task_id, actor)
        if task.state != State.WORKING or not _awaits_pickup(task_id):
            return None
        record(task, EventKind.PICKED_UP, actor, now())
    return task


def note_turn_ended(task_id: str, *, actor: Actor, consumed: int) -> Task | None:
    """A hosted ACP agent's turn ended and nothing more is waiting: the session is idle
    until the next message (the live view's `idleSince`, the task page's "Idle — waiting
    for your next message"). A timeline fact, never a state change; nothing is written
    unless the task is `working` (a paused or finished task says so itself), nor when a
    user message past `consumed` (the last one the host prompted; an answer to one of its
    questions is no prompt) is waiting: a message takes the task's lock to arrive, so
    under it the two cannot cross. Nor twice in a row: one note per wait."""
    with transaction.atomic():
        task = lock(task_id, actor)
        if task.state != State.WORKING:
            return None
        later = set(
            Message.objects.filter(task_id=task_id, role="user", seq__gt=consumed).values_list(
                "seq", flat=True
            )[:100]
        )
        if later:  # answers to its questions are the permissions' outcomes, never prompts
            answers = TaskEvent.objects.filter(task_id=task_id, kind=EventKind.INPUT_PROVIDED)
            later -= set(answers.values_list("data__messageSeq", flat=True))
        if later:
            return None
        latest = TaskEvent.objects.filter(task_id=task_id).order_by("-id").values("kind")[:1]
        if [e["kind"] for e in latest] == [EventKind.TURN_ENDED]:
            return None  # idle already: one note per wait
        record(task, EventKind.TURN_ENDED, actor, now())
    return task


def _awaits_pickup(task_id: str) -> bool:
    """Was the task's latest resume to `working`, with no worker's pickup since?"""
    last = (
        TaskEvent.objects.filter(task_id=task_id, kind__in=(EventKind.RESUMED, EventKind.PICKED_UP))
        .order_by("-id")
        .values_list("kind", "to_state")
        .first()
    )
    return last is not None and last == (EventKind.RESUMED, State.WORKING)


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
    also: Callable[[], object] | None = None,
) -> Task:
    checks.reason(reason)
    if text is not None:
        checks.text(text, "text", limit=checks.MAX_TEXT)
    with transaction.atomic():
        task = lock(task_id, actor)
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
        if also is not None:
            also()
    return task


def start_task(task_id: str, *, actor: Actor, text: str | None = None) -> Task:
    return _simple_move(task_id, Action.START, EventKind.STARTED, actor=actor, text=text)


def complete_task(
    task_id: str,
    *,
    actor: Actor,
    text: str | None = None,
    reply_only: bool = False,
    also: Callable[[], object] | None = None,
) -> Task:
    """`reply_only`: the agent answered with a message rather than doing tracked work; A2A
    clients that asked with message/send get that Message back instead of the Task.
    `also`: a write of the caller's that commits with the completion, or not at all (the
    runtime gives its run's lease back with it: one transaction less per run)."""
    extra = {"replyOnly": True} if reply_only else None
    return _simple_move(
        task_id, Action.COMPLETE, EventKind.COMPLETED, actor=actor, text=text, extra=extra,
        also=also,
    )  # fmt: skip


def fail_task(task_id: str, *, actor: Actor, reason: str, text: str | None = None) -> Task:
    return _simple_move(
        task_id, Action.FAIL, EventKind.FAILED, actor=actor, reason=reason, text=text or reason
    )


def reject_task(task_id: str, *, actor: Actor, reason: str, text: str | None = None) -> Task:
    return _simple_move(
        task_id, Action.REJECT, EventKind.REJECTED, actor=actor, reason=reason, text=text or reason
    )


def cancel_task(task_id: str, *, actor: Actor, reason: str = "") -> Task:
    """Cancel from any non-terminal state. An open suspension ends as `canceled`
    (which also clears a Bindu checkpoint) and an open input request is withdrawn."""
    checks.reason(reason)
    with transaction.atomic():
        task = lock(task_id, actor)
        target = move(task.state, Action.CANCEL).to
        at = now()
        data: dict[str, Any] = {}
        susp = current_suspension(task)
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
            EventKind.CANCELED,
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
    checks.parts(parts, "parts")
    checks.text(name, "name", limit=200)
    checks.text(description, "description", limit=checks.MAX_SUMMARY)
    metadata = checks.mapping(metadata, "metadata")
    if artifact_id is not None:
        checks.identifier(artifact_id, "artifactId")
    with transaction.atomic():
        task = lock(task_id, actor)
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
                metadata=metadata,
                created_at=at,
                updated_at=at,
            )
        record(
            task,
            EventKind.ARTIFACT_ADDED,
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
