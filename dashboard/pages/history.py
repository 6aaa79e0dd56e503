"""History: search every task, of any age, finished or not (agui/search.py). The board
holds the live view (open tasks and the recently finished); this page answers from the
search documents the projection keeps for every task, a page at a time, and its URL holds
the whole search, so a search is saved or shared as a link."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from a2a import skills
from a2a.lifecycle import State
from a2a.models import Task
from agui import search
from dashboard import selectors

STATE_CHOICES = [
    ("open", "open (any)"),
    ("paused", "paused (any)"),
    ("finished", "finished (any)"),
    *[(s.value, s.value) for s in State],
]


def _link(request: HttpRequest, filters: dict[str, str], **cursor: int | None) -> str:
    """This page with these filters (the empty ones left out) and a cursor."""
    params = {k: v for k, v in filters.items() if v}
    params.update({k: str(v) for k, v in cursor.items() if v is not None})
    return request.path + (f"?{urlencode(params)}" if params else "")


@login_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    """`?q=` words (each a prefix of a word, "quoted phrases" as written), `who=`,
    `state=` (a state or a group), `skill=`, `origin=`, `context=`; `after=` / `before=`
    the cursors of the older / newer page. A cursor this page did not make: 400, with the
    first page and a note."""
    status, note = 200, ""
    try:
        found = selectors.history(request.GET)
    except selectors.BadCursor:
        cleaned = request.GET.copy()
        cleaned.pop("after", None)
        cleaned.pop("before", None)
        found = selectors.history(cleaned)
        status, note = 400, "That page link is not one this page made: here is the first page."
    f, page = found.filters, found.found
    searching = any(f.values())
    return render(
        request,
        "dashboard/history.html",
        {
            "page": "history",
            "f": f,
            "found": page,
            "searching": searching,
            "note": note,
            "older": _link(request, f, after=page.older) if page.older else "",
            "newer": _link(request, f, before=page.newer) if page.newer else "",
            "first": _link(request, f) if page.newer else "",
            "states": STATE_CHOICES,
            "skills": sorted({s["id"] for s in skills.catalog()} | ({f["skill"]} - {""})),
            "origin_choices": Task.Origin.choices,
            "origin_labels": dict(Task.Origin.choices),
            "page_size": search.PAGE,
        },
        status=status,
    )
