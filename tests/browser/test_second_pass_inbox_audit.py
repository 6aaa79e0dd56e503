"""Issue 15, second pass, where the browser's JavaScript decides: the inbox's `a` key never
answers a request the operator has not chosen, the board's search and the server's bulk
filter agree that a search's words must share one field, the audit log shows dates in the
reader's own clock and names it, and two accessibility faults axe reported are gone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from dashboard.models import AuditEntry
from dashboard.selectors import Filters, entry_matches
from tests.browser.conftest import live
from tests.dashboard.conftest import late_night_entry
from tests.runtime.conftest import state, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def inbox_with_request(open_as, user, start, text: str):
    """An approval request waiting, and `user`'s inbox showing it: (task, page, its item)."""
    task = start("approval", text)
    wait_state(task.id, "input-required", timeout=60)
    page = open_as(user, "/inbox")
    live(page)
    item = page.locator(f'.inbox-item[data-task="{task.id}"]')
    expect(item).to_be_visible()
    return task, page, item


def test_a_with_nothing_selected_chooses_the_first_request_and_answers_nothing(
    open_as, operator, start
):
    task, page, item = inbox_with_request(
        open_as, operator, start, "Roll out release 2.16 to production"
    )
    page.evaluate("window.__sameDocument = true")

    page.keyboard.press("a")
    expect(page.locator("#inbox-hint")).to_have_text(
        "Selected “Approve the plan”. Press a again to approve it, or j/k to choose another."
    )
    expect(item).to_have_class(re.compile(r"\bcurrent\b"))
    expect(item.locator("input[data-decision=approve]")).not_to_be_checked()
    assert page.evaluate("window.__sameDocument") is True  # nothing was submitted
    assert state(task.id) == "input-required"
    assert not AuditEntry.objects.filter(task_id=task.id, action="answer").exists()

    page.keyboard.press("a")  # now it is the chosen one: approve and send
    expect(page.locator(".resolved-text").first).to_contain_text("Approved by operator:ana")
    wait_state(task.id, "completed", timeout=60)


def test_a_viewer_pressing_a_or_r_in_the_inbox_decides_nothing_and_is_offered_nothing(
    open_as, viewer, start
):
    task, page, item = inbox_with_request(open_as, viewer, start, "Rotate the signing keys")
    page.keyboard.press("a")  # nothing chosen: an operator would be offered the first one
    page.keyboard.press("r")
    page.keyboard.press("j")  # moving through the list still works for a viewer
    expect(item).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator("#inbox-hint")).to_have_text("")
    assert state(task.id) == "input-required"
    assert not AuditEntry.objects.filter(task_id=task.id, action="answer").exists()


ENTRIES = [
    {
        "taskId": "t-decoy",
        "skill": "batch",
        "title": "Re-render thumbnails",
        "status": "paused-by-client",
        "pause": {"reason": "the judge asked us to hold", "requestedBy": "apikey:ci"},
    },
    {"taskId": "t-wanted", "skill": "approval", "title": "Judge the batch", "status": "working"},
    {"taskId": "t-ctx", "contextId": "ctx-judge", "skill": "batch", "status": "submitted"},
]
QUERIES = [
    "Judge batch",
    "batch judge",
    "hold judge",
    "judge",
    "BATCH",
    "ci hold",
    "t-",
    "",
    '"the judge"',
    '"judge the"',
    '"judge  asked" hold',
    '"unclosed judge',
    '""',
]


def test_the_board_search_and_the_bulk_filter_agree_words_share_one_field(open_as, operator):
    page = open_as(operator, "/")
    for q in QUERIES:
        expected = [e["taskId"] for e in ENTRIES if entry_matches(e, Filters(q=q))]
        shown = page.evaluate(
            """async ([entries, q]) => {
                const m = await import('/static/js/describe.js');
                return entries.filter((e) => m.matches(e, {q})).map((e) => e.taskId);
            }""",
            [ENTRIES, q],
        )
        assert shown == expected, q
    assert [e["taskId"] for e in ENTRIES if entry_matches(e, Filters(q="Judge batch"))] == [
        "t-wanted"
    ]


def test_the_audit_shows_date_and_time_in_the_readers_zone_and_names_it(open_as, operator):
    late_night_entry()
    page = open_as(operator, "/audit", zone="Asia/Tokyo")
    expect(page.locator("table.audit th").first).to_have_text("When (your time: Asia/Tokyo)")
    cell = page.locator("table.audit tbody tr").first.locator("time")
    expect(cell).to_have_text("2026-01-03 08:30:05")  # the next morning in Tokyo


def test_count_cards_say_their_text_and_the_breadcrumb_link_stands_out(open_as, operator, start):
    task = start("scheduled", "Post the daily digest", minutes=60)
    page = open_as(operator, "/")
    live(page)
    for card in page.locator(".count").all():  # the label's words, as the card shows them
        seen = " ".join(card.locator(".count-l").inner_text().split())
        name = re.search(r'link "([^"]*)"', card.aria_snapshot())
        assert name and seen in name.group(1), (seen, card.aria_snapshot())
    page.goto(f"/tasks/{task.id}")
    crumb = page.locator(".crumbs a")
    expect(crumb).to_have_text("Board")
    assert "underline" in crumb.evaluate("a => getComputedStyle(a).textDecorationLine")
