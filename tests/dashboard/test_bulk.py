"""Bulk pause/resume/cancel: a preview that counts what will change and says why the rest
is skipped, a required reason, then a summary of what was done."""

from __future__ import annotations

import html as html_lib
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


def confirm_form(page: str) -> dict[str, list[str]]:
    """What the preview's confirm form posts, as the browser would send it."""
    form = re.search(r'<form method="post" action="/bulk"[^>]*>(.*?)</form>', page, re.S)
    assert form, "the preview has no confirm form"
    data: dict[str, list[str]] = {}
    for tag in re.findall(r"<input\b[^>]*>", form.group(1)):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            data.setdefault(name.group(1), []).append(
                html_lib.unescape(value.group(1) if value else "")
            )
    return data


def test_an_empty_reason_shows_the_preview_again_for_the_same_tasks(op, make_task, unchanged):
    working = [make_task("working", text=f"export {i}") for i in range(2)]
    done = make_task("completed", text="export done")
    ids = [*(t.id for t in working), done.id]
    with unchanged():
        first = op.post("/bulk", {"action": "pause", "scope": "selection", "ids": ids})
        page = first.content.decode()
        assert first.status_code == 400
        assert "Pause 2 tasks?" in page  # the preview, not a dead end
        assert sorted(confirmed(page)) == sorted(t.id for t in working)
        assert "skipped: task is completed" in page
        assert re.search(r'id="bulk-confirm-reason"[^>]*aria-invalid="true"', page)
        assert re.search(r'id="bulk-confirm-reason-err"[^>]*>Give a reason', page)
        # confirming with the reason still empty: the same preview again, nothing done
        again = op.post("/bulk", confirm_form(page))
        assert again.status_code == 400
        assert sorted(confirmed(again.content.decode())) == sorted(t.id for t in working)
    data = confirm_form(again.content.decode())
    data["reason"] = ["storage maintenance"]
    summary = op.post("/bulk", data).content.decode()
    assert "<strong>2</strong> paused, <strong>1</strong> skipped." in summary
    states = set(
        Task.objects.filter(pk__in=[t.id for t in working]).values_list("state", flat=True)
    )
    assert states == {"paused-by-client"}
    refused = AuditEntry.objects.filter(action="bulk", outcome="refused")
    assert refused.count() == 2 and all("Give a reason" in e.detail for e in refused)


def test_the_summary_and_audit_name_what_the_preview_skipped(op, make_task):
    working = [make_task("working", text=f"render {i}") for i in range(2)]
    held = make_task("paused-by-client", text="render held")
    done = make_task("completed", text="render done")
    preview = op.post(
        "/bulk", {"action": "pause", "scope": "filter", "q": "render", "reason": "freeze"}
    ).content.decode()
    assert "<strong>2</strong> will be paused, <strong>2</strong> will be skipped" in preview
    summary = op.post("/bulk", confirm_form(preview)).content.decode()
    assert "<strong>2</strong> paused, <strong>2</strong> skipped." in summary
    assert "render held</a> — skipped: already paused" in summary
    assert (
        "render done</a> — skipped: task is completed; only active tasks can be paused" in summary
    )
    entry = AuditEntry.objects.get(action="bulk-pause")
    assert entry.detail.startswith("pause: 2 done, 2 skipped")
    assert f"skipped (already paused): {held.id}" in entry.detail
    assert (
        f"skipped (task is completed; only active tasks can be paused): {done.id}" in entry.detail
    )
    assert all(t.id in entry.detail for t in working)
    audit = op.get("/audit").content.decode()
    assert f"skipped (already paused): {held.id}" in audit


def test_forged_skipped_ids_touch_nothing_and_are_named_as_what_they_are(op, make_task):
    """The preview's skipped ids come back from the browser: a made-up one is reported as
    no such task, one with NUL is dropped (PostgreSQL cannot look for it), and neither is
    acted on; the reasons are the server's, not the form's."""
    task = make_task("working", text="render one")
    preview = op.post(
        "/bulk", {"action": "pause", "scope": "selection", "ids": [task.id], "reason": "freeze"}
    ).content.decode()
    form = confirm_form(preview)
    form["preskipped"] = ["no-such-task", "bad\x00id"]
    summary = op.post("/bulk", form).content.decode()
    assert "<strong>1</strong> paused, <strong>1</strong> skipped." in summary
    entry = AuditEntry.objects.get(action="bulk-pause")
    assert "skipped (no such task): no-such-task" in entry.detail
    assert "bad" not in entry.detail


def test_cancel_is_spelled_canceled_in_the_preview_and_the_summary(op, make_task):
    task = make_task("working", text="old job")
    data = {"action": "cancel", "scope": "selection", "ids": [task.id], "reason": "obsolete"}
    preview = op.post("/bulk", data).content.decode()
    assert "<strong>1</strong> will be canceled" in preview
    summary = op.post("/bulk", confirm_form(preview)).content.decode()
    assert "<strong>1</strong> canceled, <strong>0</strong> skipped." in summary
    assert "old job</a> — canceled" in summary
    assert "canceld" not in preview + summary
    assert "\ncanceled: " + task.id in AuditEntry.objects.get(action="bulk-cancel").detail
