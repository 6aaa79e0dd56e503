"""The operator UI: thin views over `dashboard.selectors` (reads) and `dashboard.actions`
(writes through `a2a.services`, audited). Pages are server-rendered; static/js keeps them
live from the AG-UI WebSocket."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django import forms as django_forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from a2a import skills
from a2a.errors import TaskNotFound
from a2a.lifecycle import PAUSED, TERMINAL, State
from a2a.models import Task
from agui.models import Interrupt
from dashboard import actions, forms, selectors, timeline, vocabulary
from dashboard import context as decision_context
from dashboard.roles import can_operate

STATES = [s.value for s in State]


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


def operator_only(action: str):
    """POST views that change something: signed in, holding a2a.operate_task. A refusal
    (a viewer's forged POST) is audited and answered 403; nothing else runs."""

    def wrap(view):
        @functools.wraps(view)
        @login_required
        @require_POST
        def inner(request: HttpRequest, *args, **kwargs):
            if not can_operate(request.user):
                target = kwargs.get("task_id") or kwargs.get("interrupt_id") or ""
                actions.refuse(request.user, action, target, "not permitted: viewers cannot act")
                raise PermissionDenied("Viewers can look but not act.")
            return view(request, *args, **kwargs)

        return inner

    return wrap


def _skills() -> list[dict[str, Any]]:
    """The demo agents (skills tagged "demo"): what the launcher offers."""
    return [s for s in skills.catalog() if "demo" in (s.get("tags") or [])]


# --- board -------------------------------------------------------------------------------------


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "dashboard/board.html",
        {
            "page": "board",
            "filters": selectors.Filters.from_query(request.GET),
            "states": STATES,
            "skills": [s["id"] for s in skills.catalog()],
            "origin_choices": Task.Origin.choices,
            "modes": forms.MODES,
        },
    )


# --- task detail and its actions -------------------------------------------------------------


def _emit_defaults(task: Task) -> dict[str, Any] | None:
    """The event a parked task waits for, to prefill the emit form."""
    s = task.current_suspension
    if task.state != State.PAUSED_BY_AGENT or s is None:
        return None
    c = s.conditions or {}
    if c.get("onEvent"):
        return {"name": c["onEvent"], "payload": ""}
    if c.get("trigger"):
        import json

        t = c["trigger"]
        return {"name": t.get("event"), "payload": json.dumps(t.get("match") or {})}
    return None


def _detail_context(request, task_id: str, **extra) -> dict[str, Any]:
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
        "item": _item(pending, request.get_full_path()) if pending else None,
        "progress": task.progress,
        "action_sig": f"{task.state}:{susp.handle if susp else ''}:{pending.pk if pending else ''}",
    }
    ctx.update(extra)
    return ctx


@login_required
@require_GET
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    ctx = _detail_context(request, task_id)
    if request.GET.get("fragment"):
        return render(request, "dashboard/_task_live.html", ctx)
    return render(request, "dashboard/task_detail.html", ctx)


def _back_to_task(request, task_id: str, result: actions.Result) -> HttpResponse:
    messages.success(request, result.message)
    return redirect("task-detail", task_id=task_id)


def _detail_error(request, task_id: str, which: str, form, message: str = "", status=400):
    ctx = _detail_context(
        request, task_id, **{f"{which}_form": form, "action_error": (which, message)}
    )
    return render(request, "dashboard/task_detail.html", ctx, status=status)


def _form_refusal(form) -> str:
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())


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
        actions.refuse(request.user, action, task_id, _form_refusal(form))
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


# --- inbox -------------------------------------------------------------------------------------


def _field_views(
    iid: str, fields: list[dict[str, Any]], posted=None, errors=None
) -> list[dict[str, Any]]:
    """What the template needs to draw one input per field (and its error beside it)."""
    out = []
    errors = errors or {}
    for f in fields:
        name, kind = f["name"], f.get("type", "string")
        key = f"v.{name}"
        value = posted.get(key, "") if posted is not None else ""
        if posted is None and "default" in f:
            default = f["default"]
            if kind == "enum":
                options = f.get("options") or []
                value = str(options.index(default)) if default in options else ""
            elif kind == "boolean":
                value = "true" if default else "false"
            elif kind == "approval":
                value = default if isinstance(default, str) else default.get("decision", "")
            else:
                value = str(default)
        out.append(
            {
                "name": name,
                "key": key,
                "id": f"f-{iid}-{name}",
                "label": f.get("label") or name.replace("_", " ").capitalize(),
                "type": kind,
                "required": bool(f.get("required")),
                "help": f.get("help") or "",
                "options": [(str(i), str(o)) for i, o in enumerate(f.get("options") or [])],
                "value": value,
                "comment": posted.get(f"{key}.comment", "") if posted is not None else "",
                "errors": errors.get(name, []),
            }
        )
    return out


def _item(
    interrupt,
    next_url: str,
    posted=None,
    errors=None,
    title: str | None = None,
    context: decision_context.Context | None = None,
) -> dict[str, Any]:
    """One answer card. `title` is the task's title when the caller has it already (the
    inbox reads all of them in one query); otherwise it is looked up, so every card (inbox,
    task page, demo, and each of them after a refused answer) names the task the same way."""
    content = interrupt.content or {}
    request = content.get("request") or {}
    fields = list(request.get("fields") or [])
    return {
        "interrupt": interrupt,
        "task": interrupt.task,
        "content": content,
        "request": request,
        "fields": _field_views(interrupt.interrupt_id, fields, posted, errors),
        "has_approval": any(f.get("type") == "approval" for f in fields),
        "free_text": not fields,
        "answer_text": posted.get("v.__text__", "") if posted is not None else "",
        "errors": (errors or {}).get("__all__", []),
        "next": next_url,
        "title": selectors.task_title(interrupt.task_id) if title is None else title,
        # the inbox's: what it asks to approve and what led there (dashboard/context.py)
        "context": context,
    }


def _inbox_context(request, q: str, failed: dict | None = None) -> dict[str, Any]:
    pending, resolved = selectors.inbox(q)
    here = request.path + (f"?{urlencode({'q': q})}" if q else "")
    items = []
    contexts = decision_context.for_requests([it.interrupt for it in pending])
    for it in pending:
        context = contexts.get(it.task.id)
        if failed and failed["interrupt"].pk == it.interrupt.pk:
            items.append({**failed, "context": context})
        else:
            items.append(_item(it.interrupt, here, title=it.title, context=context))
    return {
        "page": "inbox",
        "q": q,
        "items": items,
        "resolved": resolved,
    }


@login_required
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    ctx = _inbox_context(request, (request.GET.get("q") or "").strip())
    if request.GET.get("fragment"):
        return render(request, "dashboard/_inbox_lists.html", ctx)
    return render(request, "dashboard/inbox.html", ctx)


@login_required
@require_GET
def inbox_item(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    interrupt = selectors.pending_interrupt(interrupt_id)
    if interrupt is None:
        raise Http404("this request is no longer pending")
    next_url = request.GET.get("next") or reverse("inbox")
    context = decision_context.for_requests([interrupt]).get(interrupt.task_id)
    item = _item(interrupt, _safe_next(request, next_url), context=context)
    return render(request, "dashboard/_inbox_item.html", {"item": item})


def _safe_next(request, url: str) -> str:
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return url
    return reverse("inbox")


@operator_only("answer")
def inbox_answer(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    next_url = _safe_next(request, request.POST.get("next", ""))
    interrupt = selectors.pending_interrupt(interrupt_id)
    if interrupt is None:
        actions.refuse(request.user, "answer", "", f"{interrupt_id} is no longer pending")
        messages.error(request, "That request was already answered or withdrawn.")
        return redirect(next_url)
    fields = list((interrupt.content.get("request") or {}).get("fields") or [])
    values, errors = forms.answer_values(fields, request.POST)
    if not fields and request.POST.get("v.__text__", "").strip():
        values = {"answer": request.POST["v.__text__"].strip()}
    summary = forms.summarise(values)
    if errors:
        result = actions.refuse(
            request.user,
            "answer",
            interrupt.task_id,
            "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()),
            reason=summary,
            errors=errors,
        )
    else:
        result = actions.answer(
            request.user,
            interrupt.task_id,
            request_id=interrupt.request_id,
            values=values,
            summary=summary,
        )
    if result.ok:
        messages.success(request, result.message)
        return redirect(next_url)
    errors = result.errors or {"__all__": [result.message]}
    failed = _item(interrupt, next_url, request.POST, errors)
    if next_url.startswith(reverse("demo")):
        ctx = _demo_context(request, failed["task"].id, failed=failed)
        return render(request, "dashboard/demo.html", ctx, status=400)
    if next_url.startswith("/tasks/"):
        ctx = _detail_context(request, interrupt.task_id, item=failed)
        return render(request, "dashboard/task_detail.html", ctx, status=400)
    ctx = _inbox_context(request, "", failed=failed)
    return render(request, "dashboard/inbox.html", ctx, status=400)


# --- bulk --------------------------------------------------------------------------------------


def _task_ids(posted: list[str]) -> list[str]:
    """Task ids from a posted form, without those holding NUL: no task has one, and
    PostgreSQL refuses to look for them."""
    return [i for i in posted if "\x00" not in i]


@operator_only("bulk")
def bulk(request: HttpRequest) -> HttpResponse:
    """Preview -> confirm -> summary. A refused form is audited; when only the reason is
    missing the preview is shown again for the same tasks with the error beside the reason
    (the operator types it there), instead of a dead end that loses the selection."""
    form = forms.BulkForm(request.POST)
    filters = selectors.Filters.from_query(request.POST)
    back = reverse("board") + (f"?{urlencode(filters.as_query())}" if filters else "")
    valid = form.is_valid()
    if not valid:
        actions.refuse(request.user, "bulk", "bulk", _form_refusal(form))
    if not valid and set(form.errors) - {"reason"}:
        return render(
            request,
            "dashboard/bulk.html",
            {"page": "bulk", "form": form, "filters": filters, "back": back, "step": "invalid"},
            status=400,
        )
    d = form.cleaned_data
    d.setdefault("reason", "")
    verb = vocabulary.verb(d["action"])
    d["ids"] = _task_ids(d["ids"])
    if d["scope"] == "filter":
        entries = selectors.matching_entries(filters)
    else:
        entries = selectors.entries_for(d["ids"])
    if not valid or request.POST.get("step") != "confirm":
        preview = selectors.bulk_preview(d["action"], entries, filters.q)
        return render(
            request,
            "dashboard/bulk.html",
            {
                "page": "bulk",
                "step": "preview",
                "form": form,
                "d": d,
                "verb": verb,
                "preview": preview,
                "filters": filters,
                "back": back,
            },
            status=200 if valid else 400,
        )
    ids = _task_ids(request.POST.getlist("confirmed"))
    left_out = [i for i in _task_ids(request.POST.getlist("preskipped")) if i not in ids]
    mode = d["mode"] or "finish_step"
    result = actions.bulk(
        request.user,
        d["action"],
        ids,
        reason=d["reason"],
        mode=mode,
        skipped=selectors.still_skipped(d["action"], left_out),
    )
    titles = {e["taskId"]: e.get("title", "") for e in selectors.entries_for(ids + left_out)}
    return render(
        request,
        "dashboard/bulk.html",
        {
            "page": "bulk",
            "step": "done",
            "d": d,
            "verb": verb,
            "result": result,
            "titles": titles,
            "filters": filters,
            "back": back,
        },
    )


# --- demo launcher -----------------------------------------------------------------------------

PRESETS: dict[str, dict[str, Any]] = {
    "approval": {"text": "Roll out release 2.14 to production", "metadata": {}},
    "ci-wait": {"text": "Run the integration suite for PR 1234", "metadata": {"build": 1234}},
    "scheduled": {"text": "Post the daily digest", "metadata": {"minutes": 1}},
    "batch": {"text": "Re-render 40 thumbnails", "metadata": {"items": 40, "pace": 2}},
    "budget": {"text": "Research three vendors for log storage", "metadata": {"budget": 250}},
}


def _demo_context(request, guided: str = "", failed=None) -> dict[str, Any]:
    demos = []
    for skill in _skills():
        preset = PRESETS.get(skill["id"], {"text": (skill.get("examples") or ["demo"])[0]})
        demos.append({"skill": skill, "text": preset["text"]})
    ctx: dict[str, Any] = {"page": "demo", "demos": demos, "guided": None}
    if guided and "\x00" not in guided:
        task = Task.objects.filter(pk=guided).select_related("status_message").first()
        if task is not None:
            pending = Interrupt.objects.filter(
                task=task, pending=True, kind=Interrupt.Kind.INPUT_REQUEST
            ).first()
            item = failed
            if item is None and pending is not None:
                item = _item(pending, request.get_full_path())
            ctx["guided"] = {
                "task": task,
                "item": item,
                "title": timeline.text_of(
                    task.messages.order_by("seq").first().parts if task.messages.exists() else None
                ),
            }
    return ctx


@login_required
@require_GET
def demo(request: HttpRequest) -> HttpResponse:
    ctx = _demo_context(request, request.GET.get("guided", ""))
    return render(request, "dashboard/demo.html", ctx)


@operator_only("start")
def demo_start(request: HttpRequest) -> HttpResponse:
    form = forms.DemoForm(request.POST)
    demos = {s["id"] for s in _skills()}
    if not form.is_valid() or form.cleaned_data["skill"] not in demos:  # demo agents only
        actions.refuse(request.user, "start", "", "unknown demo agent")
        messages.error(request, "Pick one of the demo agents.")
        return redirect("demo")
    skill = form.cleaned_data["skill"]
    preset = PRESETS.get(skill, {"text": "demo", "metadata": {}})
    text = form.cleaned_data["text"] or preset["text"]
    _, task = actions.start_demo(request.user, skill, text, dict(preset.get("metadata", {})))
    if request.POST.get("guided"):
        return redirect(reverse("demo") + "?" + urlencode({"guided": task.id}))
    messages.success(request, f"Started {skill}: {text}")
    return redirect("task-detail", task_id=task.id)


# --- audit -------------------------------------------------------------------------------------


@login_required
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    entries, f = selectors.audit_entries(request.GET)
    return render(
        request,
        "dashboard/audit.html",
        {
            "page": "audit",
            "entries": entries,
            "f": f,
            "actions": [
                "pause",
                "resume",
                "cancel",
                "answer",
                "emit-event",
                "start",
                "bulk-pause",
                "bulk-resume",
                "bulk-cancel",
                "bulk",
            ],
        },
    )


def not_found_task(request, exc: TaskNotFound):  # pragma: no cover - safety net
    raise Http404(str(exc))
