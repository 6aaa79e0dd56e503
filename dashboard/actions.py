"""Operator actions: each calls `a2a.services` (the only write path) and writes one
AuditEntry, whether the action went through or was refused.

The live view is projected after the services' commit (agui.projection); an action that
went through brings its tasks' view up to date before the page shows the result
(`projection.catch_up`), so an operator sees their own action: the answered request gone
from the inbox, the pause's card on the task page.

Views stay thin: they check the form, call one function here and render its `Result`.
Nothing here saves a Task.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from a2a import services
from a2a.auth import user_actor
from a2a.conditions import Conditions
from a2a.errors import (
    NotAllowedNow,
    StaleHandle,
    TaskNotFound,
    TransitionRefused,
    ValidationFailed,
    refusal_hint,
)
from a2a.models import Task
from agui import projection
from dashboard.models import AuditEntry
from dashboard.vocabulary import MODE_EFFECT

DETAIL_CHARS = 2000  # an audit entry's detail; past it cut, and said so
FLASH_CHARS = 200  # a comment echoed in the flash after an answer

REFUSALS = (TaskNotFound, StaleHandle, NotAllowedNow, TransitionRefused, ValidationFailed)


@dataclass
class Result:
    ok: bool
    message: str
    errors: dict[str, list[str]] = field(default_factory=dict)  # form field -> messages


def actor_of(user) -> services.Actor:
    return user_actor(user)


def _bounded(detail: str) -> str:
    """An audit detail within DETAIL_CHARS; a longer one says it was cut, and how long."""
    if len(detail) <= DETAIL_CHARS:
        return detail
    return f"{detail[:DETAIL_CHARS]} … [cut at {DETAIL_CHARS:,} of {len(detail):,} characters]"


def audit(
    user, action: str, task_id: str, *, reason: str = "", ok: bool, detail: str = ""
) -> AuditEntry:
    return AuditEntry.objects.create(
        who=str(actor_of(user)) if user.is_authenticated else "anonymous",
        action=action,
        task_id=task_id or "",
        reason=reason,
        outcome=AuditEntry.Outcome.OK if ok else AuditEntry.Outcome.REFUSED,
        detail=_bounded(detail),
        at=timezone.now(),
    )


def refuse(user, action: str, task_id: str, message: str, *, reason: str = "", errors=None):
    """Record a refusal that happened before any service was called (bad form, no right)."""
    audit(user, action, task_id, reason=reason, ok=False, detail=message)
    return Result(False, message, errors or {})


def explain(exc: Exception) -> str:
    """A sentence for an operator; never a traceback."""
    if isinstance(exc, TransitionRefused):
        return refusal_hint(exc)
    if isinstance(exc, StaleHandle):
        return "the pause you were looking at has already ended; reload to see the task now"
    if isinstance(exc, TaskNotFound):
        return "no such task"
    if isinstance(exc, ValidationFailed):
        return "; ".join(
            f"{k}: {', '.join(v)}" if k else ", ".join(v) for k, v in exc.errors.items()
        )
    return str(exc)


def _run(user, action: str, task_id: str, call, *, reason: str = "", done: str) -> Result:
    try:
        call()
    except REFUSALS as exc:
        errors = exc.errors if isinstance(exc, ValidationFailed) else None  # by field path
        return refuse(user, action, task_id, explain(exc), reason=reason, errors=errors)
    projection.catch_up([task_id])
    audit(user, action, task_id, reason=reason, ok=True, detail=done)
    return Result(True, done)


def pause(
    user,
    task_id: str,
    *,
    reason: str,
    mode: str,
    timeout_minutes: int | None = None,
    on_timeout: str = "resume_with_summary",
) -> Result:
    conditions = None
    detail = f"Paused: {reason}. " + MODE_EFFECT.get(mode, "")
    if timeout_minutes:
        conditions = Conditions(duration_minutes=timeout_minutes, on_timeout=on_timeout)
        then = "it fails" if on_timeout == "fail" else "it resumes"
        detail += f" After {timeout_minutes} min {then}."
    return _run(
        user,
        "pause",
        task_id,
        lambda: services.pause_task(
            task_id, actor=actor_of(user), reason=reason, mode=mode, resume_when=conditions
        ),
        reason=reason,
        done=detail,
    )


def resume(
    user,
    task_id: str,
    *,
    handle: str | None,
    resume_input: Any = None,
    continue_transcript: bool = True,
) -> Result:
    detail = "Resumed" + (" with input" if resume_input is not None else "")
    if not continue_transcript:
        detail += ", on a fresh transcript"
    return _run(
        user,
        "resume",
        task_id,
        lambda: services.resume_task(
            task_id,
            actor=actor_of(user),
            handle=handle or None,
            resume_input=resume_input,
            continue_transcript=continue_transcript,
        ),
        done=detail,
    )


def cancel(user, task_id: str, *, reason: str) -> Result:
    return _run(
        user,
        "cancel",
        task_id,
        lambda: services.cancel_task(task_id, actor=actor_of(user), reason=reason),
        reason=reason,
        done=f"Canceled: {reason}",
    )


def emit_event(user, name: str, payload: dict[str, Any], *, task_id: str = "") -> Result:
    woke: list[dict] = []

    def call():
        event = services.emit_event(name, payload, actor=actor_of(user))
        woke.extend(event.woke)
        projection.catch_up(w.get("taskId", "") for w in event.woke)

    result = _run(user, "emit-event", task_id, call, done=f"event {name}")
    if result.ok:
        result.message = f"event {name} sent; it woke {len(woke)} task(s)"
    return result


def answer(user, task_id: str, *, request_id: str, values: dict[str, Any], summary: str) -> Result:
    """Answer an open input request. The services validate the values against the request's
    fields; their errors come back keyed by field name and the task keeps waiting."""
    try:
        services.answer_input(
            task_id, request_id, values, actor=actor_of(user), via="taskdeck-dashboard"
        )
    except ValidationFailed as exc:
        errors = field_errors(exc.errors)
        return refuse(user, "answer", task_id, explain(exc), reason=summary, errors=errors)
    except REFUSALS as exc:
        return refuse(user, "answer", task_id, explain(exc), reason=summary)
    projection.catch_up([task_id])
    audit(user, "answer", task_id, reason=summary, ok=True, detail=f"answered {request_id}")
    return Result(True, said(values))


DECIDED = {"approve": "Approved", "reject": "Rejected"}


def said(values: dict[str, Any]) -> str:
    """The flash after an answer, in the words the inbox's records use ("Rejected: too
    risky"), not the audit's `decision=reject: …` summary: it is read by a person."""
    for value in values.values():
        if isinstance(value, dict) and "decision" in value:
            said_as = DECIDED.get(value["decision"], "Answered")
            comment = str(value.get("comment") or "").strip()
            if len(comment) > FLASH_CHARS:  # the page echoes a line, not the whole comment
                comment = f"{comment[:FLASH_CHARS].rstrip()}… ({len(comment):,} characters sent)"
            return f"{said_as}: {comment}" if comment else f"{said_as}."
    return "Answer sent; the task goes on."


def field_errors(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """Service error paths (`message.parts.0.data.values.budget`) -> form fields (`budget`);
    anything not about one field goes under "__all__"."""
    out: dict[str, list[str]] = {}
    for path, messages in errors.items():
        _, sep, name = path.rpartition("values.")
        key = name if sep and "." not in name else "__all__"
        if path.endswith(".requestId"):
            messages = ["this request has already been answered or withdrawn"]
        out.setdefault(key, []).extend(messages)
    return out


def start_demo(user, skill: str, text: str, metadata: dict[str, Any]) -> tuple[Result, Task | None]:
    message = services.IncomingMessage(
        message_id=f"demo-{uuid.uuid4()}", parts=[{"kind": "text", "text": text}]
    )
    task = services.receive_message(
        message,
        actor=actor_of(user),
        skill=skill,
        metadata={"skill": skill, **metadata},
        origin=services.Origin(Task.Origin.DASHBOARD),
    ).task
    projection.catch_up([task.id])
    audit(user, "start", task.id, ok=True, detail=f"started {skill} demo: {text}")
    return Result(True, f"started {skill}: {text}"), task


def rerun(user, task_id: str, *, kind: str, seen_latest: str) -> tuple[Result, Task | None]:
    """Re-run an ended task, or retry a failed one from its failed step (kind
    services.RERUN / RETRY): a new linked task, audited on the original (the detail names
    the new one); a refusal (still running, failed without steps, a hosted ACP agent's,
    re-run meanwhile: `seen_latest` is the newest re-run the page showed) is audited too
    and changes nothing."""
    action = kind  # "rerun" / "retry"
    try:
        task = services.rerun_task(
            task_id, actor=actor_of(user), kind=kind, seen_latest=seen_latest
        )
    except REFUSALS as exc:
        return refuse(user, action, task_id, explain(exc)), None
    projection.catch_up([task_id, task.id])
    retry = kind == services.RETRY
    done = f"{'retried from its failed step' if retry else 're-run'} as {task.id}"
    audit(user, action, task_id, ok=True, detail=done)
    said = f"Started {task.id[:8]}, a {'retry' if retry else 're-run'} of {task_id[:8]}."
    return Result(True, said), task


def send_message(user, task_id: str, text: str) -> Result:
    """A user message on an existing task (a hosted ACP session's next prompt), through the
    one path of a user message (a2a.services.receive_message): refused as every door's is
    when the task is paused or finished."""
    message = services.IncomingMessage(
        message_id=f"dashboard-{uuid.uuid4()}", parts=[{"kind": "text", "text": text}]
    )
    return _run(
        user, "message", task_id,
        lambda: services.receive_message(message, actor=actor_of(user), task_id=task_id),
        done=f"sent: {text}",
    )  # fmt: skip
