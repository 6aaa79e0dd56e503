"""Pause (client), park (agent), resume, and the timeout of a suspension.

Every pause opens a Suspension row with a fresh handle; every resume, cancel or timeout
closes it. `Task.current_suspension` points at the open one, so a resume checks its handle
without scanning history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from a2a.conditions import Conditions
from a2a.errors import StaleHandle, ValidationFailed
from a2a.event_kinds import EventKind
from a2a.lifecycle import Action, Dialect, move, resume_target
from a2a.models import Suspension, Task
from a2a.prepared import PreparedInsert, PreparedUpdate
from a2a.services import checks
from a2a.services._core import Actor, current_suspension, lock, now, record, set_state

_SUSPENSION_FIELDS = ("state", "status_timestamp", "current_suspension")


@dataclass(frozen=True)
class PauseOutcome:
    task: Task
    suspension: Suspension
    created: bool  # False for an idempotent repeat (RFC pause of a client-paused task)


@dataclass(frozen=True)
class ResumeOutcome:
    task: Task
    suspension: Suspension
    previous_state: str


# A pause's new suspension and a resume's end of it, compiled once (a2a/prepared.py)
_NEW_SUSPENSION = PreparedInsert(Suspension)
_SAVE_SUSPENSION = PreparedUpdate(Suspension)
_RESUMED_FIELDS = (
    "ending",
    "ended_at",
    "ended_by",
    "cause",
    "had_resume_input",
    "resume_input",
    "continue_transcript",
    "resumed_to",
)


def _open(
    task: Task,
    *,
    initiator: str,
    actor: Actor,
    at: datetime,
    reason: str,
    conditions: Conditions,
    paused_from: str,
    mode: str = "",
    summary: str = "",
    metadata: dict[str, Any] | None = None,
    dialect: Dialect = Dialect.RFC,
) -> Suspension:
    return _NEW_SUSPENSION.insert(
        task=task,
        initiator=initiator,
        dialect=dialect.value,
        reason=reason,
        mode=mode,
        conditions=conditions.as_dict(),
        on_event=conditions.on_event or "",
        trigger_event=(conditions.trigger or {}).get("event", ""),
        summary=summary,
        deadline=conditions.deadline(at),
        paused_from=paused_from,
        requested_by=str(actor),
        metadata=metadata or {},
        suspended_at=at,
    )


def _suspension_data(s: Suspension) -> dict[str, Any]:
    return {
        "handle": s.handle,
        "initiator": s.initiator,
        "mode": s.mode,
        "conditions": s.conditions,
        "deadline": s.deadline.isoformat() if s.deadline else None,
        "pausedFrom": s.paused_from,
    }


def pause_task(
    task_id: str,
    *,
    actor: Actor,
    reason: str = "",
    mode: str = Suspension.Mode.FINISH_STEP,
    resume_when: Conditions | dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    dialect: Dialect = Dialect.RFC,
) -> PauseOutcome:
    """Client-initiated pause (`tasks/pause`). The state flips at once; the runtime stops at
    the boundary `mode` names. Pausing an agent-parked task is an operator hold: the agent's
    suspension ends as superseded and its conditions stop firing. `resume_when` may be the
    conditions' JSON form (checked here, errors under `resumeWhen`)."""
    checks.reason(reason)
    checks.mode(mode)
    resume_when = checks.conditions(resume_when, "resumeWhen")
    metadata = checks.resume_input_spec(checks.mapping(metadata, "metadata"))
    checks.preset_fits(metadata, resume_when, "resumeWhen")
    with transaction.atomic():
        task = lock(task_id, actor)
        m = move(task.state, Action.PAUSE, dialect)
        current = task.current_suspension
        if m.noop and current is not None:
            return PauseOutcome(task, current, created=False)
        at = now()
        paused_from = task.state
        data: dict[str, Any] = {}
        if current is not None:  # operator hold over an agent's park
            paused_from = current.paused_from
            Suspension.objects.filter(pk=current.pk).update(
                ending=Suspension.Ending.SUPERSEDED, ended_at=at, ended_by=str(actor)
            )
            data["supersedes"] = current.handle
        susp = _open(
            task,
            initiator=Suspension.Initiator.CLIENT,
            actor=actor,
            at=at,
            reason=reason,
            conditions=resume_when,
            paused_from=paused_from,
            mode=mode,
            metadata=metadata,
            dialect=dialect,
        )
        task.current_suspension = susp
        previous = set_state(task, m.to, at)
        record(
            task,
            EventKind.PAUSED,
            actor,
            at,
            from_state=previous,
            reason=reason,
            data={**_suspension_data(susp), **data},
            fields=_SUSPENSION_FIELDS,
        )
    return PauseOutcome(task, susp, created=True)


def park_task(
    task_id: str,
    *,
    actor: Actor,
    reason: str,
    conditions: Conditions | dict[str, Any] | None = None,
    summary: str = "",
    metadata: dict[str, Any] | None = None,
) -> PauseOutcome:
    """Agent-initiated self-park (`tasks/await_resumption`) until a condition, a deadline
    or an explicit resume. An agent must say why."""
    checks.reason(reason, blank=False)
    conditions = checks.conditions(conditions, "conditions")
    checks.text(summary, "summary", limit=checks.MAX_SUMMARY)
    metadata = checks.resume_input_spec(checks.mapping(metadata, "metadata"))
    checks.preset_fits(metadata, conditions, "conditions")
    with transaction.atomic():
        task = lock(task_id, actor)
        m = move(task.state, Action.PARK)
        at = now()
        susp = _open(
            task,
            initiator=Suspension.Initiator.AGENT,
            actor=actor,
            at=at,
            reason=reason,
            conditions=conditions,
            paused_from=task.state,
            summary=summary,
            metadata=metadata,
        )
        task.current_suspension = susp
        previous = set_state(task, m.to, at)
        record(
            task,
            EventKind.PARKED,
            actor,
            at,
            from_state=previous,
            reason=reason,
            data={**_suspension_data(susp), "summary": summary},
            fields=_SUSPENSION_FIELDS,
        )
    return PauseOutcome(task, susp, created=True)


def resume_task(
    task_id: str,
    *,
    actor: Actor,
    handle: str | None = None,
    resume_input: Any = None,
    continue_transcript: bool = True,
    cause: str = Suspension.Cause.EXPLICIT_RESUME,
    dialect: Dialect = Dialect.RFC,
    reason: str = "",
) -> ResumeOutcome:
    """Resume a paused task: back to `working`, or to `input-required` if it was paused
    from there. A handle, when given, must name the current suspension (else StaleHandle);
    a task that is not paused raises TransitionRefused."""
    if handle is not None:
        checks.text(handle, "handle", limit=80)
    checks.storable(resume_input, "input")
    if not isinstance(continue_transcript, bool):
        raise ValidationFailed({"continueTranscript": ["must be true or false"]})
    if cause not in Suspension.Cause.values:
        raise ValidationFailed({"cause": [f"must be one of {', '.join(Suspension.Cause.values)}"]})
    checks.reason(reason)
    with transaction.atomic():
        task = lock(task_id, actor)
        move(task.state, Action.RESUME, dialect)
        susp = current_suspension(task)
        if handle is not None and (susp is None or susp.handle != handle):
            raise StaleHandle(handle)
        if susp is not None:  # the input the pausing side said it expects, if it did
            resume_input = checks.resume_input(susp.metadata.get("resumeInput"), resume_input)
        at = now()
        target = resume_target(susp.paused_from if susp else None)
        if susp is not None:
            susp.ending = Suspension.Ending.RESUMED
            susp.ended_at = at
            susp.ended_by = str(actor)
            susp.cause = cause
            susp.had_resume_input = resume_input is not None
            susp.resume_input = resume_input
            susp.continue_transcript = continue_transcript
            susp.resumed_to = target
            _SAVE_SUSPENSION.save(susp, _RESUMED_FIELDS)
        task.current_suspension = None
        previous = set_state(task, target, at)
        record(
            task,
            EventKind.RESUMED,
            actor,
            at,
            from_state=previous,
            reason=reason,
            data={
                "handle": susp.handle if susp else None,
                "cause": cause,
                "hadResumeInput": resume_input is not None,
                "continueTranscript": continue_transcript,
            },
            fields=_SUSPENSION_FIELDS,
        )
    return ResumeOutcome(task, susp, previous_state=previous)


def expire_suspension(handle: str, *, actor: Actor) -> Task | None:
    """The deadline of suspension `handle` has passed: apply its `onTimeout`.

    Returns None when there is nothing to do (already ended, or not due yet), so the
    scheduler can call it again safely after a restart or from several processes.
    """
    with transaction.atomic():
        susp = Suspension.objects.filter(handle=handle).only("task_id").first()
        if susp is None:
            return None
        task = lock(susp.task_id)
        current = current_suspension(task)
        at = now()
        if current is None or current.handle != handle or not current.deadline:
            return None
        if current.deadline > at:
            return None
        timeout = (current.conditions or {}).get("timeout") or {}
        on_timeout = timeout.get("onTimeout", "fail")
        if on_timeout == "fail":
            m = move(task.state, Action.TIMEOUT_FAIL)
            Suspension.objects.filter(pk=current.pk).update(
                ending=Suspension.Ending.TIMED_OUT,
                ended_at=at,
                ended_by=str(actor),
                cause=Suspension.Cause.TIMEOUT,
            )
            task.current_suspension = None
            previous = set_state(task, m.to, at)
            reason = f"timed out after {timeout.get('durationMinutes')} min: {current.reason}"
            record(
                task,
                EventKind.TIMED_OUT,
                actor,
                at,
                from_state=previous,
                reason=reason,
                data={"handle": handle, "onTimeout": on_timeout},
                fields=_SUSPENSION_FIELDS,
            )
            return task
        value = timeout.get("input") if on_timeout == "resume_with_input" else None
        if on_timeout == "resume_with_summary":
            value = {"summary": current.summary or current.reason}
        # Still inside the same transaction: the row lock is held, so nothing slips between.
        return resume_task(
            task.id,
            actor=actor,
            handle=handle,
            resume_input=value,
            cause=Suspension.Cause.TIMEOUT,
            reason=f"deadline passed ({on_timeout})",
        ).task
