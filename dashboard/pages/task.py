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
from django.urls import reverse
from django.views.decorators.http import require_GET

from a2a import services, skills, work
from a2a.errors import TaskNotFound
from a2a.lifecycle import PAUSED, TERMINAL, State
from a2a.models import Suspension, Task
from agui import selectors as agui_selectors
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


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "text" if "\n" in str(value) else "string"


def expected_input(susp: Suspension | None) -> tuple[list[dict[str, Any]], str]:
    """The typed fields of the resume form, and where they come from (issue 15, feature 6):
    the pause's declared `metadata.resumeInput` fields (an agent's `expects`), or else the
    keys of a timeout's preset input (typed from their values, prefilled with them: what
    the deadline would send). ([], "") when the pausing side said nothing: raw JSON."""
    if susp is None:
        return [], ""
    declared = ((susp.metadata or {}).get("resumeInput") or {}).get("fields")
    if declared:
        return list(declared), "The input this pause asks for, checked before the task goes on."
    timeout = (susp.conditions or {}).get("timeout") or {}
    preset = timeout.get("input") if timeout.get("onTimeout") == "resume_with_input" else None
    simple = (str, int, float, bool)
    if isinstance(preset, dict) and preset and all(isinstance(v, simple) for v in preset.values()):
        fields = [
            {"name": k, "type": _kind(v), "default": v, "required": False}
            for k, v in preset.items()
        ]
        return fields, "Prefilled with what its deadline would send; change what you need."
    return [], ""


RERUNS_SHOWN = 5  # "re-run as …" links on the original's page, newest first


def _ending(detail: timeline.Detail, state: State) -> dict[str, Any]:
    """How the task ended (before the agent's last words), the last words unless they
    only repeat the reason (a failure's text is its reason), and its re-run links and
    buttons (issue 29). Counts the recorded steps of a failed task only."""
    task = detail.task
    if state not in TERMINAL:
        return {"ending": None, "last_words": "", "can_rerun": False, "can_retry": False}
    ending = detail.ending
    parts = task.status_message.parts if task.status_message else []
    words = " ".join(p.get("text", "") for p in parts if p.get("kind") == "text").strip()
    if ending is not None and ending.repeats(words):
        words = ""
    steps = work.recorded_steps(task.id) if state == State.FAILED else 0
    refused = services.rerun_refusal(task, services.RERUN)
    return {
        "ending": ending,
        "last_words": words,
        "can_rerun": not refused,
        "rerun_refused": refused,
        "can_retry": not services.rerun_refusal(task, services.RETRY, steps),
        "recorded_steps": steps,
    }


def _links(task: Task) -> dict[str, Any]:
    """The task this one re-runs, and the newest re-runs of it (the `rerun_of` index)."""
    reruns = list(task.reruns.order_by("-created_at", "-id")[:RERUNS_SHOWN]) if task.pk else []
    return {"rerun_of": task.rerun_of if task.rerun_of_id else None, "reruns": reruns}


def context(
    request, task_id: str, *, resume_posted=None, resume_errors=None, **extra
) -> dict[str, Any]:
    """What the task page draws; `extra` overrides (a refused form, its error), and
    `resume_posted`/`resume_errors` redraw typed resume fields with what was typed."""
    # The view's version first, then the core's rows: the page then reflects at least the
    # version it says (data-version), and detail.js refetches for anything projected after.
    # Read the other way round, a change committed and projected between the two reads was
    # counted as shown but drawn from rows read before it: the page kept "Working · waiting"
    # after the worker's pickup (tests/browser/test_hosted_acp.py, seen in CI).
    projected = agui_selectors.projected_version(task_id)
    try:
        detail = timeline.build(task_id)
    except Task.DoesNotExist:
        raise Http404("no such task") from None
    task = detail.task
    state = State(task.state)
    pending = next((i for i in detail.interrupts if i.pending and i.kind == "INPUT_REQUEST"), None)
    emit = _emit_defaults(task)
    susp = task.current_suspension
    task_url = reverse("task-detail", args=[task.id])
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
        # a hosted ACP agent (a2a.skills.HOSTED_TAG): "stop now" may cancel its turn (the
        # form says so)
        "hosted_acp": _hosted(task),
        # its session takes the next message from the task page while it works (idle
        # between turns, or queued behind the turn in flight)
        "message_form": forms.MessageForm() if _hosted(task) and state == State.WORKING else None,
        "resume_form": forms.ResumeForm(
            initial={"handle": susp.handle if susp else "", "continue_transcript": True}
        ),
        "cancel_form": forms.CancelForm(),
        "emit_form": forms.EmitEventForm(initial=emit) if emit else None,
        # an answer comes back to the task's page, never to the fragment URL the live
        # refresh fetched this card by (issue 29: an unstyled page after answering)
        "item": answer_card.card(pending, task_url) if pending else None,
        "progress": task.progress,
        # the task version the live view (the answer card's Interrupt) reflects: the page
        # refetches when the view passes it, and says when it is behind (agui.projection)
        "view_version": projected,
        "view_behind": projected < task.version,
        "timeline_filters": timeline.FILTERS,
        **_resume_fields(susp, resume_posted, resume_errors),
        **payloads(detail),
        **_ending(detail, state),
        **_links(task),
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


@login_required
@require_GET
def entry_text(request: HttpRequest, task_id: str, ref: int) -> HttpResponse:
    """One timeline entry, whole, as plain text: what the page cut (issue 29: entries
    stopped at 4,000 characters with no marker). Plain text, so agent text is never
    markup here; the same reader rights as the task page."""
    try:
        detail = timeline.build(task_id, whole=True)
    except Task.DoesNotExist:
        raise Http404("no such task") from None
    entry = next((e for e in detail.entries if e.ref == ref), None)
    if entry is None:
        raise Http404("no such entry")
    lines = [f"{entry.title} — {entry.actor} — {entry.at.isoformat()}", ""]
    if entry.text:
        lines += [entry.text, ""]
    lines += [f"{k}: {v}" for k, v in entry.details]
    response = HttpResponse("\n".join(lines), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{task_id}-{ref}.txt"'
    return response


def _back_to_task(request, task_id: str, result: actions.Result) -> HttpResponse:
    messages.success(request, result.message)
    return redirect("task-detail", task_id=task_id)


def _detail_error(request, task_id: str, which: str, form, message: str = "", status=400):
    ctx = context(request, task_id, **{f"{which}_form": form, "action_error": (which, message)})
    return render(request, "dashboard/task_detail.html", ctx, status=status)


def _typed_resume_error(request, task_id: str, form, errors, message: str = ""):
    ctx = context(
        request, task_id, resume_form=form, action_error=("resume", message),
        resume_posted=request.POST, resume_errors=errors,
    )  # fmt: skip
    return render(request, "dashboard/task_detail.html", ctx, status=400)


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


def _resume_fields(susp, posted=None, errors=None) -> dict[str, Any]:
    fields, source = expected_input(susp if susp and susp.is_open else None)
    if not fields:
        return {"resume_fields": [], "resume_fields_from": ""}
    return {
        "resume_fields": answer_card.field_views("resume", fields, posted, errors),
        "resume_fields_from": source,
    }


STALE_PAUSE = (
    "Nothing was sent: the pause you typed this for ended before you pressed Resume{now}. "
    "What you typed is kept{where}."
)


def _stale_resume(request, task_id: str, handle: str) -> HttpResponse | None:
    """The page again when the resume named a pause that has ended (tab B typed, tab A
    resumed and paused again, issue 29): refused by the services (StaleHandle), and the
    typed input kept. The kept form now names the current pause, so a second press is a
    decision about the pause on screen, made after reading this."""
    if not handle:
        return None
    task = selectors.get_task(task_id)
    susp = task.current_suspension
    if susp is not None and susp.handle == handle:
        return None  # refused for another reason
    paused = State(task.state) in PAUSED and susp is not None
    message = STALE_PAUSE.format(
        now="; the task was paused again" if paused else f"; the task is {task.state} now",
        where=": press Resume again to send it to the current pause" if paused else " below",
    )
    data = request.POST.copy()
    data["handle"] = susp.handle if paused else ""
    form = forms.ResumeForm(data)
    form.is_valid()
    kept = "\n".join(
        f"{k.removeprefix('v.')}: {v}" for k, v in request.POST.items()
        if (k.startswith("v.") or k == "resume_input") and v.strip()
    )  # fmt: skip
    ctx = context(
        request, task_id, resume_form=form, action_error=("resume", message),
        resume_posted=data, kept_input="" if paused else kept,
    )  # fmt: skip
    return render(request, "dashboard/task_detail.html", ctx, status=409)


@operator_only("resume")
def task_resume(request: HttpRequest, task_id: str) -> HttpResponse:
    """With typed fields (expected_input), the posted fields become the resume input,
    checked like an inbox answer (and by the services against the pause's declaration):
    a refusal shows each error beside its field, once, and changes nothing."""
    try:
        susp = selectors.get_task(task_id).current_suspension
    except TaskNotFound:  # audited and answered as every task action answers it
        actions.refuse(request.user, "resume", task_id, "no such task")
        raise Http404("no such task") from None
    fields, _ = expected_input(susp)
    posted_handle = request.POST.get("handle", "")
    if fields:
        values, errors = forms.answer_values(fields, request.POST)
        form = forms.ResumeForm(request.POST)
        if errors or not form.is_valid():
            actions.refuse(request.user, "resume", task_id, forms.refusal(form) or str(errors))
            return _typed_resume_error(request, task_id, form, errors)
        d = form.cleaned_data
        result = actions.resume(
            request.user, task_id, handle=d["handle"], resume_input=values or None,
            continue_transcript=d["continue_transcript"],
        )  # fmt: skip
        if result.ok:
            return _back_to_task(request, task_id, result)
        if (stale := _stale_resume(request, task_id, posted_handle)) is not None:
            return stale
        by_field = {
            k.split(".", 1)[1]: v for k, v in result.errors.items() if k.startswith("input.")
        }
        # errors about one field are shown beside it only (not again, with the services'
        # path "input.budget:", in the alert above the form)
        message = "" if by_field and len(by_field) == len(result.errors) else result.message
        return _typed_resume_error(request, task_id, form, by_field, message)
    form = forms.ResumeForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        result = actions.resume(
            request.user, task_id, handle=d["handle"], resume_input=d["resume_input"],
            continue_transcript=d["continue_transcript"],
        )  # fmt: skip
        if result.ok:
            return _back_to_task(request, task_id, result)
        if (stale := _stale_resume(request, task_id, posted_handle)) is not None:
            return stale
        return _detail_error(request, task_id, "resume", form, result.message, status=409)
    actions.refuse(request.user, "resume", task_id, forms.refusal(form))
    return _detail_error(request, task_id, "resume", form)


@operator_only("cancel")
def task_cancel(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="cancel", which="cancel", form_class=forms.CancelForm,
        act=lambda d: actions.cancel(request.user, task_id, reason=d["reason"]),
    )  # fmt: skip


@operator_only("message")
def task_message(request: HttpRequest, task_id: str) -> HttpResponse:
    """The next message of a hosted ACP agent's session. Only those take one from here:
    for another agent a message is an answer, given through its question's card."""
    try:
        task = selectors.get_task(task_id)
    except TaskNotFound:  # audited and answered as every task action answers it
        actions.refuse(request.user, "message", task_id, "no such task")
        raise Http404("no such task") from None
    if not _hosted(task):
        form = forms.MessageForm(request.POST)
        message = "only a hosted ACP agent's session takes a message from here"
        actions.refuse(request.user, "message", task_id, message)
        return _detail_error(request, task_id, "message", form, message, status=409)
    return _task_action(
        request, task_id, action="message", which="message", form_class=forms.MessageForm,
        act=lambda d: actions.send_message(request.user, task_id, d["text"]),
    )  # fmt: skip


def _hosted(task: Task) -> bool:
    """A hosted ACP agent's task (its skill's card carries a2a.skills.HOSTED_TAG)."""
    return skills.HOSTED_TAG in ((skills.get(task.skill) or {}).get("tags") or [])


@operator_only("emit-event")
def task_emit(request: HttpRequest, task_id: str) -> HttpResponse:
    return _task_action(
        request, task_id, action="emit-event", which="emit", form_class=forms.EmitEventForm,
        act=lambda d: actions.emit_event(
            request.user, d["name"], d["payload"] or {}, task_id=task_id
        ),
    )  # fmt: skip


def _rerun(request: HttpRequest, task_id: str, kind: str) -> HttpResponse:
    """Re-run or retry (dashboard.actions.rerun): to the new task's page, or this page
    again with why it was refused (409), the refusal audited."""
    seen = (request.POST.get("latest") or "").replace("\x00", "")[:64]
    result, new = actions.rerun(request.user, task_id, kind=kind, seen_latest=seen)
    if new is not None:
        messages.success(request, result.message)
        return redirect("task-detail", task_id=new.id)
    ctx = context(request, task_id, action_error=(kind, result.message))
    return render(request, "dashboard/task_detail.html", ctx, status=409)


@operator_only("rerun")
def task_rerun(request: HttpRequest, task_id: str) -> HttpResponse:
    return _rerun(request, task_id, services.RERUN)


@operator_only("retry")
def task_retry(request: HttpRequest, task_id: str) -> HttpResponse:
    return _rerun(request, task_id, services.RETRY)
