"""Bulk pause/resume/cancel: a preview that counts what will change and says why the rest
is skipped, a required reason, then a summary of what was done."""

from __future__ import annotations

import re

import pytest

from a2a.models import Task
from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db(transaction=True)


def confirmed(html: str) -> list[str]:
    return re.findall(r'name="confirmed" value="([^"]+)"', html)


def test_preview_counts_the_filter_and_names_the_skipped(op, make_task, unchanged):
    working = [make_task("working", text=f"batch {i}") for i in range(3)]
    paused = make_task("paused-by-client", text="batch held")
    make_task("working", text="unrelated job")
    make_task("completed", text="batch done")
    with unchanged():
        response = op.post(
            "/bulk",
            {"action": "pause", "scope": "filter", "q": "batch", "reason": "release freeze"},
        )
    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>3</strong> will be paused, <strong>2</strong> will be skipped" in html
    assert "all tasks matching q=batch" in html
    assert sorted(confirmed(html)) == sorted(t.id for t in working)
    assert "skipped: already paused" in html
    assert "skipped: task is completed; only active tasks can be paused" in html
    assert paused.id not in confirmed(html)


def test_confirming_pauses_them_and_summarises(op, make_task):
    tasks = [make_task("working", text=f"batch {i}") for i in range(3)]
    done = make_task("completed", text="batch done")
    ids = [t.id for t in tasks]
    data = {"action": "pause", "scope": "selection", "ids": [*ids, done.id], "reason": "freeze"}
    preview = op.post("/bulk", data).content.decode()
    assert sorted(confirmed(preview)) == sorted(ids)
    # one task finishes between preview and confirmation: it is skipped, with the reason
    from a2a import services
    from tests.conftest import AGENT

    services.complete_task(ids[0], actor=AGENT)
    response = op.post("/bulk", {**data, "step": "confirm", "confirmed": ids})
    html = response.content.decode()
    assert "<strong>2</strong> paused, <strong>1</strong> skipped" in html
    assert "skipped: task is completed; only active tasks can be paused" in html
    states = dict(Task.objects.filter(pk__in=ids).values_list("id", "state"))
    assert sorted(states.values()) == ["completed", "paused-by-client", "paused-by-client"]
    entry = AuditEntry.objects.get(action="bulk-pause")
    assert entry.task_id == "bulk" and entry.reason == "freeze" and entry.outcome == "ok"
    assert entry.detail.startswith("pause: 2 done, 1 skipped")
    assert ids[1] in entry.detail and ids[0] in entry.detail


def test_bulk_needs_a_reason_and_a_selection(op, make_task, unchanged):
    task = make_task("working")
    with unchanged():
        no_reason = op.post("/bulk", {"action": "cancel", "scope": "selection", "ids": [task.id]})
        nothing = op.post("/bulk", {"action": "cancel", "scope": "selection", "reason": "x"})
    assert no_reason.status_code == nothing.status_code == 400
    assert "Give a reason" in no_reason.content.decode()
    assert "Select at least one task" in nothing.content.decode()
    assert AuditEntry.objects.filter(action="bulk", outcome="refused").count() == 2


def test_bulk_resume_and_cancel(op, make_task):
    paused = [make_task("paused-by-client") for _ in range(2)]
    ids = [t.id for t in paused]
    base = {"scope": "filter", "state": "paused", "reason": "freeze over", "step": "confirm"}
    op.post("/bulk", {**base, "action": "resume", "confirmed": ids})
    assert set(Task.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"working"}
    op.post("/bulk", {**base, "action": "cancel", "confirmed": ids})
    assert set(Task.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"canceled"}
