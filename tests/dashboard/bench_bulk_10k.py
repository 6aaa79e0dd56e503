"""A measurement, not part of the suite (its name is not test_*): one bulk cancel of 10,000
working tasks through the dashboard's form, on the database of the run (issue 29, item 3:
"10,000 tasks cancelled in one action"). Prints the time of the preview and of the
confirmed action to its end; docs/dashboard.md keeps the figure. Run it alone, on a quiet
machine:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/taskdeck REDIS_URL=redis://127.0.0.1:6379/4 \\
    TASKDECK_EXPECT_POSTGRES=1 TASKDECK_PROJECTION=thread \\
    .venv/bin/pytest -p no:cacheprovider -q -s tests/dashboard/bench_bulk_10k.py
"""

from __future__ import annotations

import time

import pytest

from a2a.models import Task
from dashboard.models import AuditEntry, BulkOperation
from tests.agui.test_projection_scale import add_tasks
from tests.dashboard.test_bulk import confirm_form, said

pytestmark = pytest.mark.django_db(transaction=True)
N = 10_000


@pytest.mark.timeout(1800)
def test_cancel_ten_thousand_in_one_action(op):
    add_tasks(N)
    t0 = time.perf_counter()
    preview = op.post(
        "/bulk", {"action": "cancel", "scope": "filter", "state": "working", "reason": "bench"}
    ).content.decode()
    t1 = time.perf_counter()
    assert f"Cancel {N:,} tasks?" in preview
    response = op.post("/bulk", confirm_form(preview))  # TASKDECK_BULK_RUN=inline: to its end
    t2 = time.perf_counter()
    page = op.get(response["Location"]).content.decode()
    assert f"{N:,} canceled, 0 refused, of {N:,}" in said(page)
    assert Task.objects.filter(state="canceled").count() == N
    assert AuditEntry.objects.filter(action="bulk-cancel").exclude(task_id="bulk").count() == N
    op_row = BulkOperation.objects.get()
    print(
        f"\nbulk cancel of {N:,} tasks: preview {t1 - t0:.2f} s, confirmed to done "
        f"{t2 - t1:.1f} s ({N / (t2 - t1):.0f} tasks/s; operation #{op_row.pk})"
    )
