"""The audit log: who did what and why, refused requests included (its CSV export is
dashboard/exports.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import selectors, vocabulary


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
            "actions": vocabulary.AUDIT_ACTIONS,
        },
    )
