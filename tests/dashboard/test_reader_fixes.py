"""Issue 29, items 8, 9 and 12 on the server: long text is cut with a marker and a way to
read all of it; a long reject comment is kept whole in the audit and its CSV, and the
flash echoes a bounded line; an answer card on the task page comes back to the task's
page (never the fragment URL); a typed resume checks the field's schema (minimum) and
says each error once; the audit shows whole task ids; the board without JavaScript
lists tasks; a task that completed after a rejection counts and filters as rejected."""

from __future__ import annotations

import csv
import io
import re

import pytest

from a2a import services
from a2a.errors import ValidationFailed
from a2a.input_requests import parse_request
from agui.models import Interrupt, ViewTask
from dashboard import selectors, timeline
from dashboard.models import AuditEntry
from tests.conftest import AGENT, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"title": "Ship it?", "fields": [{"name": "ok", "type": "approval"}]}


def asking(make_task, text="Roll out 2.14"):
    task = make_task("working", text=text)
    services.request_input(task.id, actor=AGENT, explanation="Decide", request=APPROVAL)
    return task, Interrupt.objects.get(task=task, pending=True)


def test_a_long_timeline_entry_is_cut_at_a_word_says_so_and_links_to_all_of_it(op, make_task):
    task = make_task("working")
    words = " ".join(f"word{i:04d}" for i in range(900))  # 8,099 characters
    services.emit_text(task.id, words, actor=AGENT)
    html = op.get(f"/tasks/{task.id}").content.decode()
    shown = re.search(r'<p class="tl-text">(word0000.*?)</p>', html, re.S).group(1)
    assert len(shown) <= timeline.TEXT_CHARS + 2 and shown.endswith(" …")
    assert re.fullmatch(r"(word\d{4} )+…", shown)  # whole words, then the marker
    link = re.search(r'the whole entry is 8099 characters\. <a href="([^"]+)">Read all', html)
    assert link, "no cut marker"
    whole = op.get(link.group(1))
    assert whole.status_code == 200 and whole["Content-Type"].startswith("text/plain")
    assert words in whole.content.decode()
    assert op.get(f"/tasks/{task.id}/entries/999999.txt").status_code == 404


def test_a_long_reject_comment_is_kept_whole_in_the_audit_and_bounded_in_the_flash(op, make_task):
    task, interrupt = asking(make_task)
    comment = ("too risky " * 500).strip() + "!"  # 5,000 characters
    response = op.post(
        f"/inbox/{interrupt.pk}/answer",
        {"v.ok": "reject", "v.ok.comment": comment, "next": f"/tasks/{task.id}"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"/tasks/{task.id}"
    flash = re.search(r'<li class="flash-success">(.*?)</li>', response.content.decode(), re.S)
    assert flash and len(flash.group(1)) < 300 and "5,000 characters sent" in flash.group(1)
    entry = AuditEntry.objects.get(task_id=task.id, action="answer")
    assert comment.strip() in entry.reason
    rows = list(csv.DictReader(io.StringIO(op.get("/audit.csv").content.decode())))
    assert comment.strip() in next(r["reason"] for r in rows if r["task_id"] == task.id)
    # the timeline shows the decision cut, and says so
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "Read all of it" in html


def test_the_answer_card_of_a_live_refresh_comes_back_to_the_task_page(op, make_task):
    task, _ = asking(make_task)
    fragment = op.get(f"/tasks/{task.id}?fragment=1").content.decode()
    assert f'name="next" value="/tasks/{task.id}"' in fragment
    assert "fragment" not in re.search(r'name="next" value="([^"]*)"', fragment).group(1)


EXPECTS = {"fields": [{"name": "budget", "type": "integer", "minimum": 0}]}


def test_a_typed_resume_checks_the_minimum_and_says_each_error_once(op, make_task, unchanged):
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="over", metadata={"resumeInput": EXPECTS})
    handle = task.__class__.objects.get(pk=task.id).current_suspension.handle
    with unchanged():
        response = op.post(f"/tasks/{task.id}/resume", {"handle": handle, "v.budget": "-50"})
    html = response.content.decode()
    assert response.status_code == 400
    assert html.count("must be at least 0") == 1 and "input.budget" not in html
    assert 'id="action-error"' not in html


def test_bounds_belong_to_number_fields_only():
    with pytest.raises(ValidationFailed) as refused:
        parse_request({"requestId": "r", "fields": [{"name": "x", "type": "string", "minimum": 1}]})
    assert "fields.0.minimum" in refused.value.errors
    with pytest.raises(ValidationFailed):
        parse_request(
            {"requestId": "r", "fields": [{"name": "x", "type": "number", "maximum": "9"}]}
        )


def test_the_audit_shows_whole_task_ids(op, make_task):
    task = make_task("paused-by-client")
    op.post(f"/tasks/{task.id}/cancel", {"reason": "done with it"})
    html = op.get("/audit").content.decode()
    assert f"<code>{task.id}</code>" in html


def test_without_javascript_the_board_lists_tasks_and_says_what_needs_it(op, make_task):
    task = make_task("working", text="Index the <b>archive</b>")
    html = op.get("/").content.decode()
    noscript = re.search(r"<noscript>\s*<p class=\"flash-note\">(.*?)</noscript>", html, re.S)
    assert noscript and "live updates need JavaScript" in noscript.group(1)
    assert f'href="/tasks/{task.id}"' in noscript.group(1)
    assert "Index the &lt;b&gt;archive&lt;/b&gt;" in noscript.group(1)
    assert "No live updates: they need JavaScript" in html
    filtered = op.get("/?state=completed").content.decode()
    assert f'href="/tasks/{task.id}"' not in filtered


def test_completed_after_a_rejection_counts_and_filters_as_rejected(op, make_task):
    task, interrupt = asking(make_task)
    services.answer_input(
        task.id, interrupt.request_id, {"ok": {"decision": "reject", "comment": "no"}},
        actor=CLIENT, via="test",
    )  # fmt: skip
    services.complete_task(task.id, actor=AGENT)
    entry = ViewTask.objects.get(task_id=task.id).entry
    assert entry["status"] == "completed" and selectors.board_state(entry) == "rejected"

    def ids(state: str) -> set[str]:
        return {e["taskId"] for e in selectors.matching_entries(selectors.Filters(state=state))}

    assert task.id in ids("rejected") and task.id not in ids("completed")
