"""The board: every task, live."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from a2a import skills
from a2a.lifecycle import State
from a2a.models import Task
from agui.models import ViewTask
from dashboard import forms, selectors

STATES = [s.value for s in State]
STATIC_ROWS = 50  # rows drawn for a browser without JavaScript
STATIC_READ = 500  # view entries read for them at most (filters may skip some)


def static_rows(f: selectors.Filters) -> list[dict]:
    """The newest-updated tasks matching the filters, for the page without JavaScript
    (issue 29: it said "Connecting…" over an empty board for ever). Bounded reads on the
    view's updated_at index, whatever the number of tasks; the live board replaces them."""
    newest = ViewTask.objects.order_by("-updated_at", "-task_id")
    entries = newest.values_list("entry", flat=True)[:STATIC_READ]
    return [e for e in entries if selectors.entry_matches(e, f)][:STATIC_ROWS]


@login_required
@require_GET
def board(request: HttpRequest) -> HttpResponse:
    filters = selectors.Filters.from_query(request.GET)
    return render(
        request,
        "dashboard/board.html",
        {
            "page": "board",
            "filters": filters,
            "static_rows": static_rows(filters),
            "static_size": STATIC_ROWS,
            "states": STATES,
            "skills": [s["id"] for s in skills.catalog()],
            "origin_choices": Task.Origin.choices,
            "modes": forms.MODES,
        },
    )
