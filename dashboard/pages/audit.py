"""The audit log: who did what and why, refused requests included (its CSV export is
dashboard/exports.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import selectors, vocabulary


def _link(request: HttpRequest, **changes: str | None) -> str:
    """This page's URL with `changes` to its query (None removes a key): filters kept."""
    q = request.GET.copy()
    for key, value in changes.items():
        if value is None:
            q.pop(key, None)
        else:
            q[key] = value
    return f"?{q.urlencode()}" if q else request.path


ARIA = {"-at": ("descending", "none"), "at": ("ascending", "none"),
        "who": ("none", "ascending"), "-who": ("none", "descending")}  # fmt: skip


@login_required
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    """Sorted by a column (When, Who: a click turns it around), a page of 100 at a time;
    sort, page and filters all in the URL."""
    found = selectors.audit_entries(request.GET)
    when_sort, who_sort = ARIA[found.sort]
    return render(
        request,
        "dashboard/audit.html",
        {
            "page": "audit",
            "entries": found.rows,
            "f": found.filters,
            "found": found,
            "last": found.first + len(found.rows) - 1,
            "sort_when": _link(request, sort="at" if found.sort == "-at" else None, page=None),
            "sort_who": _link(request, sort="-who" if found.sort == "who" else "who", page=None),
            "aria_when": when_sort,
            "aria_who": who_sort,
            "prev": _link(request, page=str(found.page - 1)) if found.page > 1 else "",
            "next": _link(request, page=str(found.page + 1)) if found.page < found.pages else "",
            "actions": vocabulary.AUDIT_ACTIONS,
        },
    )
