"""What an ACP session does to Taskdeck, in protocol-neutral calls (synchronous, on the
database; the connection runs them in a thread).

A session is a context: its prompts go to its current task through
`a2a.services.receive_message` (a finished task makes way for a new one, as a conversation
goes on); suspend and resume act on that task through `pause_task` / `resume_task`. The
session row itself (mode, title, current task) is the door's own bookkeeping.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from a2a import access, conf, services, skills
from a2a.acp_door import commands
from a2a.acp_door.errors import SessionNotFound
from a2a.acp_door.models import AcpSession
from a2a.acp_door.updates import question_text
from a2a.errors import NotAllowedNow, TaskNotFound, ValidationFailed
from a2a.formats import text_of
from a2a.lifecycle import TERMINAL, Action, State, TransitionRefused
from a2a.models import Suspension, Task, TaskEvent
from a2a.work import settled

TITLE_CHARS = 80
PAGE = 50


def open_session(cwd: str, *, actor: services.Actor, skill: str | None = None) -> AcpSession:
    skill = skill or conf.TASKDECK.default_skill
    if skills.get(skill) is None:
        raise ValidationFailed({"modeId": [f"unknown mode; offered: {', '.join(skills.ids())}"]})
    at = timezone.now()
    context_id = f"acp-{uuid.uuid4()}"
    with transaction.atomic():  # the session's context is its tenant's from the start
        services.claim_context(context_id, actor)
        return AcpSession.objects.create(
            context_id=context_id,
            skill=skill,
            cwd=cwd,
            created_by=str(actor),
            owner=actor.tenant,
            created_at=at,
            updated_at=at,
        )


def get_session(session_id: Any, actor: services.Actor) -> AcpSession:
    """The session, if `actor` may use it; another tenant's is not found (no oracle)."""
    if not isinstance(session_id, str):
        raise ValidationFailed({"sessionId": ["must be a string"]})
    mine = access.visible(AcpSession.objects.filter(pk=session_id), actor)
    session = mine.first()
    if session is None:
        raise SessionNotFound(session_id)
    return session


def reopen(session: AcpSession) -> None:
    """A closed session that is loaded or resumed is open again."""
    if session.closed_at is not None:
        AcpSession.objects.filter(pk=session.pk).update(closed_at=None)
        session.closed_at = None


def close(session: AcpSession) -> None:
    AcpSession.objects.filter(pk=session.pk).update(closed_at=timezone.now())


def set_mode(session: AcpSession, mode_id: Any) -> None:
    """The mode (skill) of the session's next task. Refused while its task is still open:
    the next prompt would go to that task, and the switch would silently do nothing."""
    if not isinstance(mode_id, str) or skills.get(mode_id) is None:
        raise ValidationFailed({"modeId": [f"unknown mode; offered: {', '.join(skills.ids())}"]})
    task = current_task(session)
    if task is not None and task.state not in TERMINAL and mode_id != session.skill:
        raise NotAllowedNow(
            State(task.state),
            f"the mode applies to the next task, and task {task.id} ({task.skill}) is still "
            f"{task.state}: {commands.way_out(task.state)}, then switch",
        )
    session.skill = mode_id
    session.updated_at = timezone.now()
    session.save(update_fields=["skill", "updated_at"])


def list_sessions(
    cwd: str | None, cursor: str | None, *, actor: services.Actor
) -> tuple[list[AcpSession], str | None]:
    """Sessions `actor` may use, most recently active first; `cursor` is the last session
    id seen. A closed session stays listed while it has a task (its work and history are
    there to load; closing only stopped following it); a closed one that never started a
    task is gone from the list (docs/acp.md, "Sessions")."""
    listed = Q(closed_at__isnull=True) | Q(task__isnull=False)
    rows = access.visible(AcpSession.objects.filter(listed), actor)
    if cwd:
        rows = rows.filter(cwd=cwd)
    if cursor:
        last = AcpSession.objects.filter(pk=cursor).values("updated_at").first()
        if last is None:
            raise ValidationFailed({"cursor": ["unknown cursor"]})
        rows = rows.filter(updated_at__lt=last["updated_at"]) | rows.filter(
            updated_at=last["updated_at"], session_id__gt=cursor
        )
    page = list(rows.order_by("-updated_at", "session_id")[: PAGE + 1])
    more = len(page) > PAGE
    page = page[:PAGE]
    return page, (page[-1].session_id if more else None)


def attach_point(session: AcpSession) -> tuple[dict[str, int], int]:
    """Per-task cursors at the log's current end, and the floor for tasks not yet seen:
    a session attached now hears what happens from now on. The session's tenant's tasks
    only (updates.read_facts says why)."""
    cursors = dict(
        TaskEvent.objects.filter(task__context_id=session.context_id, task__owner=session.owner)
        .values_list("task_id")
        .annotate(last=Max("id"))
        .values_list("task_id", "last")
    )
    floor = TaskEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return cursors, floor


def current_task(session: AcpSession) -> Task | None:
    if session.task_id is None:
        return None
    return Task.objects.filter(pk=session.task_id).first()


@dataclass(frozen=True)
class Prompted:
    task: Task
    created: bool
    answered: bool


def prompt(
    session: AcpSession,
    parts: list[dict[str, Any]],
    *,
    actor: services.Actor,
    metadata: dict[str, Any] | None = None,
) -> Prompted:
    """A prompt: a user message to the session's task (or a new task of its mode, with
    `metadata` for its agent)."""
    title = session.title or _title(text_of(parts), session.cwd)
    message = services.IncomingMessage(message_id=f"acp-{uuid.uuid4()}", parts=parts)
    with transaction.atomic():
        locked = AcpSession.objects.select_for_update().get(pk=session.pk)
        question = _may_prompt(locked)
        try:
            delivered = services.receive_message(
                message,
                actor=actor,
                task_id=locked.task_id,
                context_id=locked.context_id,
                skill=locked.skill,
                metadata={**(metadata or {}), "skill": locked.skill},
                origin=services.Origin(Task.Origin.ACP, locked.session_id, title),
                after_end="new_task",
            )
        except ValidationFailed as exc:
            if not question:
                raise
            way = commands.way_out(State.INPUT_REQUIRED)
            raise ValidationFailed(
                {**exc.errors, "": [f"the task waits on a question: {way}"]}
            ) from None
        locked.task_id = delivered.task.id
        locked.title = title
        locked.updated_at = timezone.now()
        locked.save(update_fields=["task", "title", "updated_at"])
    session.task_id, session.title = locked.task_id, title
    return Prompted(delivered.task, delivered.created, delivered.answered)


def _may_prompt(session: AcpSession) -> bool:
    """One turn at a time per session, across editors and processes (the session row is
    locked): a task that is paused, or queued or held by a worker, takes no prompt; the
    refusal says who paused it and which command gets the user out."""
    task = current_task(session)
    if task is None:
        return False
    state = State(task.state)
    if state in (State.PAUSED_BY_CLIENT, State.PAUSED_BY_AGENT):
        susp = task.current_suspension
        who = commands.paused_by(susp.requested_by, susp.initiator) if susp else "someone"
        why = f": {susp.reason}" if susp and susp.reason else ""
        parked = bool(susp and susp.initiator == Suspension.Initiator.AGENT)
        raise NotAllowedNow(
            state,
            f"this task is paused by {who}{why}; {commands.way_out(state, parked=parked)}",
        )
    if state in (State.SUBMITTED, State.WORKING) and not settled(task.id):
        raise NotAllowedNow(
            state,
            f"task {task.id} is {state.value} (another editor's prompt, or work going on in "
            f"the background): {commands.way_out(state)}",
        )
    return state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED)  # the prompt answers it


def status(session: AcpSession) -> str:
    """`/status` as text."""
    task = current_task(session)
    if task is None:
        return commands.status_text(None, None, "")
    susp = task.current_suspension if task.current_suspension_id else None
    question = ""
    if task.state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED) and task.input_request:
        question = "Open question: " + question_text(task.input_request, "")
    return commands.status_text(task, susp, question)


def open_question(session: AcpSession) -> Task | None:
    """The session's task when it waits on a question (input or auth required)."""
    task = current_task(session)
    if task is not None and task.state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED):
        return task
    return None


def _title(text: str, cwd: str) -> str:
    first = (text.strip().splitlines() or [""])[0]
    where = PurePath(cwd).name if cwd else ""
    title = f"{where}: {first}" if where else first
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _active_task(session: AcpSession, action: Action) -> Task:
    task = current_task(session)
    if task is None or task.state in TERMINAL:
        raise TransitionRefused(State(task.state if task else State.COMPLETED), action)
    return task


def suspend(
    session: AcpSession,
    *,
    actor: services.Actor,
    reason: str,
    resume_when: Any,
    mode: str,
) -> services.PauseOutcome:
    task = _active_task(session, Action.PAUSE)
    return services.pause_task(
        task.id,
        actor=actor,
        reason=reason,
        mode=mode,
        resume_when=resume_when,
        metadata={"via": "acp", "sessionId": session.session_id},
    )


def summary(task: Task) -> str:
    """The digest `session/suspend` recommends showing while a session is parked."""
    done = f", {task.progress['done']} of {task.progress['total']} done" if task.progress else ""
    return f"Task {task.id} ({task.skill}) paused{done}."


def resume(
    session: AcpSession,
    *,
    actor: services.Actor,
    handle: Any,
    resume_input: Any,
    continue_transcript: Any,
) -> services.ResumeOutcome:
    task = current_task(session)
    if task is None:
        raise TransitionRefused(State.COMPLETED, Action.RESUME)
    return services.resume_task(
        task.id,
        actor=actor,
        handle=handle,
        resume_input=resume_input,
        continue_transcript=continue_transcript,
    )


def cancel(
    session: AcpSession, *, actor: services.Actor, reason: str, unless_paused: bool = False
) -> bool:
    """Cancel the session's task if it is still going; False when there was nothing to.
    `unless_paused`: leave a paused task alone (a `session/cancel` between turns)."""
    task = current_task(session)
    if task is None or task.state in TERMINAL:
        return False
    if unless_paused and task.state in (State.PAUSED_BY_CLIENT, State.PAUSED_BY_AGENT):
        return False
    try:
        services.cancel_task(task.id, actor=actor, reason=reason)
    except (TransitionRefused, TaskNotFound):
        return False  # it ended meanwhile
    return True


def answer(task_id: str, request_id: str, values: dict[str, Any], *, actor: services.Actor):
    """An answer given through a permission request or a form."""
    return services.answer_input(task_id, request_id, values, actor=actor, via="acp")
