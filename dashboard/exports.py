"""Exports: the audit log as CSV, with the page's filters, times in UTC (issue 15: "UTC in
exports" — a file outlives the reader's zone, and its times must sort and compare).

Spreadsheets run a cell that starts with = + - @ (or a tab / carriage return) as a
formula, and reasons and details come from operators and API clients: such a cell gets a
leading apostrophe (OWASP's CSV-injection advice), which spreadsheets show as text."""

from __future__ import annotations

import csv
import io
from datetime import UTC

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard import selectors

EXPORT_ROWS = 5000  # the newest; the page shows 200
COLUMNS = ["at_utc", "who", "via", "action", "task_id", "reason", "outcome", "detail"]
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value: str) -> str:
    return "'" + value if value.startswith(FORMULA) else value


@login_required
@require_GET
def audit_csv(request: HttpRequest) -> HttpResponse:
    query = request.GET.copy()
    query["page"] = "1"  # the newest EXPORT_ROWS in the page's order, whatever page it showed
    rows = selectors.audit_entries(query, size=EXPORT_ROWS).rows
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for r in rows:
        at = r.at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        fields = [r.who, r.via, r.action, r.task_id, r.reason, r.outcome, r.detail]
        writer.writerow([at, *(cell(str(v or "")) for v in fields)])
    stamp = timezone.now().astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="taskdeck-audit-{stamp}.csv"'
    return response
