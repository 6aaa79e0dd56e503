"""The audit log as CSV (issue 15, "UTC in exports"): the page's filters, times in UTC
with their zone, API clients' actions included, and no cell a spreadsheet would run."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from a2a import services
from dashboard.models import AuditEntry
from tests.conftest import user_message

pytestmark = pytest.mark.django_db(transaction=True)


def rows(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_audit_exports_as_csv_in_utc_with_its_filters(op, view_only):
    AuditEntry.objects.create(
        who="operator:ana", action="cancel", task_id="t-1", reason="late night",
        outcome="ok", at=datetime(2026, 1, 2, 23, 30, 5, tzinfo=UTC),
    )  # fmt: skip
    AuditEntry.objects.create(
        who="operator:bo", action="pause", task_id="t-2", reason="=HYPERLINK(\"http://x\")",
        outcome="refused", at=datetime(2026, 1, 3, 9, 0, 0, tzinfo=UTC), detail="@SUM(A1)",
    )  # fmt: skip
    key = services.Actor("apikey", "ci-bot")
    task = services.create_task(user_message("go"), actor=key, skill="batch")
    services.cancel_task(task.id, actor=key, reason="not needed")

    response = view_only.get("/audit.csv")  # viewers may read the audit, so export it
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="taskdeck-audit-')
    got = rows(response)
    assert [r["who"] for r in got] == ["apikey:ci-bot", "operator:bo", "operator:ana"]
    assert got[2]["at_utc"] == "2026-01-02T23:30:05Z"
    assert got[0]["via"] == "api" and got[0]["action"] == "cancel"
    # a formula is text in a spreadsheet
    assert got[1]["reason"] == '\'=HYPERLINK("http://x")' and got[1]["detail"] == "'@SUM(A1)"

    only = rows(op.get("/audit.csv", {"outcome": "refused"}))
    assert [r["who"] for r in only] == ["operator:bo"]


def test_signed_out_gets_the_sign_in_page_not_the_log(client):
    response = client.get("/audit.csv")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_audit_page_links_the_export_with_its_filters(op):
    html = op.get("/audit", {"who": "ana", "outcome": "ok"}).content.decode()
    assert 'href="/audit.csv?who=ana&amp;outcome=ok"' in html
