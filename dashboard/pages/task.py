"""A task's page: its state, pause banner, timeline and answer card, and the actions on it
(pause, resume, cancel, send the awaited event)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms as django_forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from a2a.lifecycle import PAUSED, TERMINAL, State
from a2a.models import Task
from dashboard import actions, forms, selectors, timeline
from dashboard.pages import answer_card
from dashboard.pages.access import operator_only


def _emit_defaults(task: Task) -> dict[str, Any] | None:
    """The event a parked task waits for, to prefill the emit form."""
    s = task.current_suspension
    if task.state != State.PAUSED_BY_AGENT or s is None:
        return None
    c = s.conditions or {}
    if c.get("onEvent"):
        return {"name": c["onEvent"], "payload": ""}
    if c.get("trigger"):
        t = c["trigger"]
        return {"name": t.get("event"), "payload": json.dumps(t.get("match") or {})}
    return None


PAYLOAD_CHARS = 50_000


def payloads(detail: timeline.Detail) -> dict[str, Any]:
    """The task's payloads as JSON, for the page's collapsible view: what the agent and
    its clients actually sent (message parts, artifact parts, metadata), from the core's
    rows rather than any door's wire format. Cut at PAYLOAD_CHARS."""
    task = detail.task
    data = {
        "taskId": task.id,
        "contextId": task.context_id,
        "state": task.state,
        "metadata": task.metadata,
        "messages": [
            {
                "seq": m.seq,
                "messageId": m.message_id,
                "role": m.role,
                "parts": m.parts,
                "metadata": m.metadata,
            }
            for m in detail.messages
        ],
        "artifacts": [
            {"artifactId": a.artifact_id, "name": a.name, "parts": a.parts, "metadata": a.metadata}
            for a in detail.artifacts
        ],
    }
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    cut = len(text) > PAYLOAD_CHARS
    return {"payloads": text[:PAYLOAD_CHARS], "payloads_cut": PAYLOAD_CHARS if cut else 0}


def context(request, task_id: str, **extra) -> dict[str, Any]:
    try:
        detail = timeline.build(task_id)
    except Task.DoesNotExist:
        raise Http404("no such task") from None
    task = detail.task
    state = State(task.state)
    pending = next((i for i in detail.interrupts if i.pending and i.kind == "INPUT_REQUEST"), None)
    emit = _emit_defaults(task)
    susp = task.current_suspension
    ctx = {
        "page": "detail",
        "detail": detail,
        "task": task,
        "origin": selectors.origin_of(task),
        "title": detail.title or task.id,
        "pause": susp,
        "pause_conditions": timeline._conditions(susp.conditions) if susp else [],
        "on_timeout": timeline.on_timeout_text(
            ((susp.conditions or {}).get("timeout") or {}).get("onTimeout") if susp else None
        ),
        "can_pause": state in (State.SUBMITTED, State.WORKING, State.PAUSED_BY_AGENT),
        "can_resume": state in PAUSED,
        "can_cancel": state not in TERMINAL,
        "is_terminal": state in TERMINAL,
        "pause_form": forms.PauseForm(),
        "resume_form": forms.ResumeForm(
            initial={"handle": susp.handle if susp else "", "continue_transcript": True}
        ),
        "cancel_form": forms.CancelForm(),
        "emit_form": forms.EmitEventForm(initial=emit) if emit else None,
        "item": answer_card.card(pending, request.get_full_path()) if pending else None,
        "progress": task.progress,
        "timeline_filters": timeline.FILTERS,
        **payloads(detail),
        "action_sig": f"{task.state}:{susp.handle if susp else ''}:{pending.pk if pending else ''}",
    }
    ctx.update(extra)
    return ctx


@login_required
@require_GET
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    ctx = context(request, task_id)
    if request.GET.get("fragment"):
        return render(request, "dashboard/_task_live.html", ctx)
    return render(request, "dashboard/task_detail.html", ctx)


def _back_to_task(request, task_id: str, result: actions.Result) -> HttpResponse:
    messages.success(request, result.message)
    return redirect("task-detail", task_id=task_id)


def _detail_error(request, task_id: str, which: str, form, message: str = "", status=400):
    ctx = context(request, task_id, **{f"{which}_form": form, "action_error": (which, message)})
    return render(request, "dashboard/task_detail.html", ctx, status=status)


def _task_action(
    request: HttpRequest,
    task_id: str,
    *,
    action: str,
    which: str,
    form_class: type[django_forms.Form],
    act: Callable[[dict[str, Any]], actions.Result],
) -> HttpResponse:
    """What every task action does: validate the form (a refused one is audited too), act
    through dashboard.actions, then back to the task, or its page again with the form and
    why it was refused (409 when the task's state refused it)."""
    form = form_class(request.POST)
    if not form.is_valid():
        actions.refuse(request.user, action, task_id, forms.refusal(form))
        return _detail_error(request, task_id, which, form)
    result = act(form.cleaned_data)
    if result.ok:
        return _back_to_task(request, task_id, result)
    return _detail_error(request, task_id, which, form, result.message, status=409)


@operator_only("pause")
def task_pause(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="pause", which="pause", form_class=forms.PauseForm,
        act=lambda d: actions.pause(
            request.user, task_id, reason=d["reason"], mode=d["mode"],
            timeout_minutes=d.get("timeout_minutes"),
            on_timeout=d.get("on_timeout") or "resume_with_summary",
        ),
    )  # fmt: skip


@operator_only("resume")
def task_resume(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="resume", which="resume", form_class=forms.ResumeForm,
        act=lambda d: actions.resume(
            request.user, task_id, handle=d["handle"], resume_input=d["resume_input"],
            continue_transcript=d["continue_transcript"],
        ),
    )  # fmt: skip


@operator_only("cancel")
def task_cancel(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="cancel", which="cancel", form_class=forms.CancelForm,
        act=lambda d: actions.cancel(request.user, task_id, reason=d["reason"]),
    )  # fmt: skip


@operator_only("emit-event")
def task_emit(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="emit-event", which="emit", form_class=forms.EmitEventForm,
        act=lambda d: actions.emit_event(
            request.user, d["name"], d["payload"] or {}, task_id=task_id
        ),
    )  # fmt: skip
