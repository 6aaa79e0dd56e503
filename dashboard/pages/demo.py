"""The demo launcher: start a demo agent, or follow one through its interrupt (guided)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from a2a import skills
from a2a.models import Task
from agui.models import Interrupt
from dashboard import actions, forms, timeline
from dashboard.pages import answer_card
from dashboard.pages.access import operator_only

LAUNCHABLE = ("demo", skills.HOSTED_TAG)  # the demo agents, and hosted ACP agents


def is_hosted(skill: dict[str, Any]) -> bool:
    return skills.HOSTED_TAG in (skill.get("tags") or [])


def demo_skills() -> list[dict[str, Any]]:
    """What the launcher offers: the demo agents and the hosted ACP agents (skills tagged
    "demo" or "acp-hosted")."""
    return [s for s in skills.catalog() if set(LAUNCHABLE) & set(s.get("tags") or [])]


PRESETS: dict[str, dict[str, Any]] = {
    "approval": {"text": "Roll out release 2.14 to production", "metadata": {}},
    "ci-wait": {"text": "Run the integration suite for PR 1234", "metadata": {"build": 1234}},
    "scheduled": {"text": "Post the daily digest", "metadata": {"minutes": 1}},
    "batch": {"text": "Re-render 40 thumbnails", "metadata": {"items": 40, "pace": 2}},
    "budget": {"text": "Research three vendors for log storage", "metadata": {"budget": 250}},
}


def context(request, guided: str = "", failed=None) -> dict[str, Any]:
    demos = []
    for skill in demo_skills():
        hosted = is_hosted(skill)
        # a hosted agent's prompt is the operator's to write (what an arbitrary agent
        # understands is not known: an example is a hint, never sent unasked)
        preset = PRESETS.get(skill["id"], {"text": ""})
        example = (skill.get("examples") or [""])[0]
        demos.append({"skill": skill, "text": preset["text"], "hosted": hosted,
                      "example": example})  # fmt: skip
    ctx: dict[str, Any] = {"page": "demo", "demos": demos, "guided": None}
    if guided and "\x00" not in guided:
        task = Task.objects.filter(pk=guided).select_related("status_message").first()
        if task is not None:
            pending = Interrupt.objects.filter(
                task=task, pending=True, kind=Interrupt.Kind.INPUT_REQUEST
            ).first()
            item = failed
            if item is None and pending is not None:
                item = answer_card.card(pending, request.get_full_path())
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
    ctx = context(request, request.GET.get("guided", ""))
    return render(request, "dashboard/demo.html", ctx)


@operator_only("start")
def demo_start(request: HttpRequest) -> HttpResponse:
    form = forms.DemoForm(request.POST)
    demos = {s["id"] for s in demo_skills()}
    if not form.is_valid() or form.cleaned_data["skill"] not in demos:  # demo agents only
        actions.refuse(request.user, "start", "", "unknown demo agent")
        messages.error(request, "Pick one of the demo agents.")
        return redirect("demo")
    skill = form.cleaned_data["skill"]
    preset = PRESETS.get(skill, {"text": "", "metadata": {}})
    text = form.cleaned_data["text"] or preset["text"]
    if not text:  # a hosted agent's first prompt is typed, never made up
        actions.refuse(request.user, "start", "", f"{skill}: no prompt")
        messages.error(request, "Type a first message for the agent.")
        return redirect("demo")
    _, task = actions.start_demo(request.user, skill, text, dict(preset.get("metadata", {})))
    if request.POST.get("guided"):
        return redirect(reverse("demo") + "?" + urlencode({"guided": task.id}))
    messages.success(request, f"Started {skill}: {text}")
    return redirect("task-detail", task_id=task.id)
