"""The AG-UI → A2A bridge: what a RunAgentInput asks of the tasks, done through
`a2a.services` (never by writing tasks directly).

- A run with `resume` answers the thread's open interrupts: an input request gets an
  `a2a.input.response` on its task, a pause gets `tasks/resume`; `cancelled` cancels the
  task. It must cover every open interrupt of the thread; all of it happens in one
  transaction, so a bad payload changes nothing.
- A run without `resume` carries a user message: it continues the thread's task if that
  is still taking messages, or starts a new task in the thread's context.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import RunAgentInput
from django.db import IntegrityError, transaction

from a2a import access, services
from a2a.errors import NotAllowedNow, StaleHandle, TaskNotFound, ValidationFailed
from a2a.lifecycle import TransitionRefused
from a2a.models import Task
from a2a.rate_limits import RateLimited
from agui import projection, selectors
from agui.models import AguiRun, AguiThread, Interrupt

THREAD_KEY_CHARS = 128  # AguiThread.thread_id


class RunRefused(Exception):
    """The input cannot be acted on; the run answers RUN_ERROR and nothing changed."""

    def __init__(self, message: str, code: str) -> None:
        self.message, self.code = message, code
        super().__init__(message)


@dataclass
class RunPlan:
    thread_id: str
    run_id: str
    task_id: str
    context_id: str
    resumed: list[str] = field(default_factory=list)  # interrupt ids this run answered
    # the task's view version before the run's own write (0: a task the run created): its
    # log rows above it are the run's, even those its opening snapshot already holds
    since: int = 0
    # who ran it: the thread's snapshots hold only the tasks it may see (a context is its
    # tenant's, a2a/services/contexts.py; a task another tenant got into it before that
    # was enforced stays out of this thread's view)
    actor: services.Actor | None = None


def _user_text(run: RunAgentInput) -> str | None:
    for message in reversed(run.messages or []):
        if getattr(message, "role", None) != "user":
            continue
        content = message.content
        if isinstance(content, str):
            return content
        texts = [getattr(p, "text", "") for p in content or [] if getattr(p, "type", "") == "text"]
        return "\n".join(t for t in texts if t) or None
    return None


def _skill(run: RunAgentInput) -> str | None:
    """The skill asked for in `forwardedProps.skill` (checked by the services)."""
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    skill = props.get("skill")
    if skill is not None and not isinstance(skill, str):
        raise RunRefused("forwardedProps.skill must be a string", "invalid_input")
    return skill


def _answer(interrupt: Interrupt, entry, actor: services.Actor) -> None:
    if entry.status == "cancelled":
        services.cancel_task(
            interrupt.task_id, actor=actor, reason=f"interrupt {interrupt.interrupt_id} cancelled"
        )
    elif interrupt.kind == Interrupt.Kind.INPUT_REQUEST:
        values = entry.payload if entry.payload is not None else {}
        if not isinstance(values, dict):
            raise ValidationFailed({"payload": ["must be an object of field name: value"]})
        services.answer_input(
            interrupt.task_id, interrupt.request_id, values, actor=actor, via="agui"
        )
    else:
        services.resume_task(
            interrupt.task_id,
            actor=actor,
            handle=interrupt.interrupt_id,
            resume_input=entry.payload,
        )


def start_run(run: RunAgentInput, actor: services.Actor) -> RunPlan:
    """Act on a RunAgentInput; raises RunRefused with nothing changed. The run's row
    commits with the writes it makes, so the projection names it the tasks' lastRunId."""
    try:
        _catch_up(run, actor)
        with transaction.atomic():
            return _start(run, actor)
    except IntegrityError:
        raise RunRefused(f"runId {run.run_id!r} was already used", "invalid_input") from None
    except ValidationFailed as exc:
        detail = "; ".join(f"{k}: {v[0]}" for k, v in exc.errors.items())
        raise RunRefused(f"the resume payload was refused: {detail}", "invalid_payload") from None
    except (TransitionRefused, StaleHandle, NotAllowedNow, TaskNotFound) as exc:
        raise RunRefused(f"the task cannot take this now: {exc}", "conflict") from None
    except RateLimited as exc:
        raise RunRefused(str(exc), "rate_limited") from None


def _catch_up(run: RunAgentInput, actor: services.Actor) -> None:
    """Which interrupts a resume answers is read from the projection (Interrupt): bring
    the thread's tasks up to date first (agui.projection.catch_up; a no-op when the
    projection runs in the writer's call)."""
    context = (
        AguiThread.objects.filter(thread_id=_thread_key(run.thread_id, actor))
        .values_list("context_id", flat=True)
        .first()
    )
    if context is not None:
        projection.catch_up(_thread_tasks(context, actor))


def _thread_tasks(context_id: str, actor: services.Actor) -> list[str]:
    """The ids of the thread's tasks `actor` may see: its interrupts are the ones a run
    waits on and a resume must answer, never another tenant's."""
    tasks = access.visible(Task.objects.filter(context_id=context_id), actor)
    return list(tasks.values_list("id", flat=True))


def _thread_key(thread_id: str, actor: services.Actor) -> str:
    """Where a thread is kept: a restricted key's threads live in its tenant's own space,
    so another tenant using the same threadId gets its own thread (no shared state, no
    way to learn that the id is taken)."""
    if not actor.restricted:
        return thread_id
    space = hashlib.sha256(actor.tenant.encode()).hexdigest()[:16]
    key = f"{space}/{thread_id}"
    if len(key) > THREAD_KEY_CHARS:
        raise RunRefused(
            f"threadId is longer than {THREAD_KEY_CHARS - len(space) - 1} characters",
            "invalid_input",
        )
    return key


def _start(run: RunAgentInput, actor: services.Actor) -> RunPlan:
    thread, _ = AguiThread.objects.select_for_update().get_or_create(
        thread_id=_thread_key(run.thread_id, actor),
        defaults={"context_id": str(uuid.uuid4()), "created_by": str(actor)},
    )
    tasks_in_thread = _thread_tasks(thread.context_id, actor)
    pending = {
        i.interrupt_id: i
        for i in Interrupt.objects.filter(pending=True, task_id__in=tasks_in_thread)
    }
    resumed: list[str] = []
    if run.resume:
        asked = [entry.interrupt_id for entry in run.resume]
        unknown = sorted(set(asked) - set(pending))
        if unknown:
            raise RunRefused(
                f"no open interrupt {', '.join(unknown)} in this thread", "interrupt_unknown"
            )
        uncovered = sorted(set(pending) - set(asked))
        if uncovered:
            raise RunRefused(
                f"resume must answer every open interrupt; missing {', '.join(uncovered)}",
                "interrupt_uncovered",
            )
        task_id = pending[asked[0]].task_id
        since = _view_version(task_id)  # caught up (_catch_up), before the answers' writes
        for entry in run.resume:
            _answer(pending[entry.interrupt_id], entry, actor)
            resumed.append(entry.interrupt_id)
    else:
        if pending:
            raise RunRefused(
                "this thread has open interrupts (" + ", ".join(sorted(pending)) + "); "
                "send a run with `resume` for them first",
                "interrupt_pending",
            )
        text = _user_text(run)
        if not text:
            raise RunRefused("the run carries no user message to act on", "invalid_input")
        message = services.IncomingMessage(
            message_id=str(uuid.uuid4()), parts=[{"kind": "text", "text": text}]
        )
        skill = _skill(run)
        since = _view_version(thread.task_id) if thread.task_id else 0
        try:
            task_id = services.receive_message(
                message,
                actor=actor,
                task_id=thread.task_id,
                context_id=thread.context_id,
                skill=skill,
                metadata={"skill": skill} if skill else None,
                origin=services.Origin(Task.Origin.AGUI, run.thread_id),
                after_end="new_task",
            ).task.id
        except ValidationFailed as exc:
            detail = "; ".join(f"{k}: {v[0]}" if k else v[0] for k, v in exc.errors.items())
            where = "forwardedProps.skill" if "skill" in exc.errors else "the message"
            raise RunRefused(f"{where} was refused: {detail}", "invalid_input") from None
        if task_id != thread.task_id:  # the thread's task had ended: a new one
            since = 0
        thread.task_id = task_id
        thread.save(update_fields=["task"])
    AguiRun.objects.create(run_id=run.run_id, thread=thread, task_id=task_id)
    return RunPlan(run.thread_id, run.run_id, task_id, thread.context_id, resumed, since, actor)


def _view_version(task_id: str) -> int:
    """The task's view version now: read before the run's write, after _catch_up."""
    return selectors.versions([task_id]).get(task_id, 0)


def finish_run(run_id: str, outcome: str) -> None:
    AguiRun.objects.filter(run_id=run_id).update(outcome=outcome)


def describe(task_id: str) -> dict[str, Any]:
    task = Task.objects.get(pk=task_id)
    return {"state": task.state, "version": task.version, "contextId": task.context_id}
