"""The board: every task, live."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from a2a import skills
from a2a.lifecycle import State
from a2a.models import Task
from dashboard import forms, selectors

STATES = [s.value for s in State]


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
