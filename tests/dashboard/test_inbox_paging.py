"""The inbox a page at a time (issue 28): oldest waiting first, keyset links that work
without JavaScript, a count that stays cheap, and a bad link answered with the first page
and a note, never a 500."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agui.models import Interrupt
from dashboard import selectors
from tests.dashboard.test_inbox import asking

pytestmark = pytest.mark.django_db(transaction=True)
APPROVAL = {"title": "Ship it?", "fields": [{"name": "decision", "type": "approval"}]}


@pytest.fixture
def five(make_task, monkeypatch) -> list[Interrupt]:
    """Five pending requests, oldest first; pages of two."""
    monkeypatch.setattr(selectors, "INBOX_PAGE", 2)
    made = [asking(make_task, APPROVAL, text=f"Job number {n}")[1] for n in range(5)]
    return sorted(made, key=lambda i: (i.created_at, i.interrupt_id))


def shown(page: str) -> list[str]:
    return re.findall(r'class="inbox-item card" id="item-([^"]+)"', page)


def next_link(page: str) -> str:
    found = re.search(r'<a class="btn btn-quiet" href="([^"]+)" rel="next">', page)
    return htmllib.unescape(found[1]) if found else ""


def test_pages_follow_one_another_oldest_first_to_the_last(op, five):
    ids = [i.pk for i in five]
    first = op.get("/inbox").content.decode()
    assert shown(first) == ids[:2]
    assert 'id="pending-count">5<' in first and "2 of 5, the longest waiting first" in first
    assert "« First page" not in first
    second = op.get(next_link(first)).content.decode()
    assert shown(second) == ids[2:4] and "« First page" in second
    last = op.get(next_link(second)).content.decode()
    assert shown(last) == ids[4:] and next_link(last) == ""
    assert 'id="pending-count">5<' in last


def test_a_page_keeps_its_place_when_earlier_requests_are_answered(op, five):
    first = op.get("/inbox").content.decode()
    link = next_link(first)
    # an answer on the second page comes back to the second page
    second = op.get(link).content.decode()
    assert f'name="next" value="{htmllib.escape(link)}"' in second.replace("&#x27;", "'")
    for interrupt in five[:2]:  # the first page's requests answered elsewhere
        answered = op.post(f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve"})
        assert answered.status_code == 302
    again = op.get(link).content.decode()
    assert shown(again) == [i.pk for i in five[2:4]]
    assert 'id="pending-count">3<' in again


@pytest.mark.parametrize(
    "cursor",
    ["nonsense!", "bm90IGEgY3Vyc29y", "MjAyNi0wMS0wMVQwMDowMDowMHx4", "", "%00"],
    ids=["not-base64", "no-separator", "naive-time", "empty", "nul"],
)
def test_a_bad_page_link_answers_the_first_page_with_a_note(op, five, cursor):
    response = op.get("/inbox", {"after": cursor})
    page = response.content.decode()
    assert shown(page) == [i.pk for i in five[:2]]
    if cursor:
        assert response.status_code == 400
        assert "not one this inbox made: here is the first page" in page
    else:
        assert response.status_code == 200


def test_the_fragment_pages_as_the_page_does(op, five):
    first = op.get("/inbox").content.decode()
    fragment = op.get(next_link(first) + "&fragment=1").content.decode()
    assert shown(fragment) == [i.pk for i in five[2:4]] and 'id="inbox-pager"' in fragment


def test_the_waiting_count_stops_at_its_cap(op, five, monkeypatch):
    monkeypatch.setattr(selectors, "INBOX_COUNT_CAP", 3)
    assert 'id="pending-count">3+<' in op.get("/inbox").content.decode()


def test_a_search_reads_a_bounded_slice_and_goes_on_from_where_it_stopped(
    op, five, make_task, monkeypatch
):
    monkeypatch.setattr(selectors, "INBOX_SCAN", 3)
    page = op.get("/inbox", {"q": "number 4"}).content.decode()
    assert shown(page) == [] and "among the requests searched so far" in page
    assert "Search on" in page
    on = op.get(next_link(page)).content.decode()
    assert shown(on) == [five[4].pk] and next_link(on) == ""


def test_a_page_costs_the_same_queries_however_many_are_waiting(op, make_task, monkeypatch):
    monkeypatch.setattr(selectors, "INBOX_PAGE", 2)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert op.get("/inbox").status_code == 200
        return len(captured)

    for _ in range(3):
        asking(make_task)
    few = queries()
    for _ in range(4):
        asking(make_task)
    assert queries() == few
