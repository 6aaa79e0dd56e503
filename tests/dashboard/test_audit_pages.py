"""Issue 15, feature 5: the audit sorts by When and Who and pages past 100 lines, the
sort, page and filters kept in the URL; the dashboard's lines and API clients' actions
(from the event log) are paged as one list."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from a2a import services
from dashboard.models import AuditEntry
from dashboard.selectors import audit_entries
from tests.conftest import user_message

pytestmark = pytest.mark.django_db(transaction=True)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def lines():
    people = ["operator:ana", "operator:Bo", "operator:cy"]
    for i in range(240):
        AuditEntry.objects.create(
            who=people[i % 3], action="pause", task_id=f"t-{i}", reason=f"line {i}",
            outcome="ok", at=T0 + timedelta(minutes=i),
        )  # fmt: skip
    key = services.Actor("apikey", "zed-bot")
    for _ in range(5):  # API actions, newer than every dashboard line
        task = services.create_task(user_message("go"), actor=key, skill="batch")
        services.cancel_task(task.id, actor=key, reason="api cancel")


def whos(found) -> list[str]:
    return [r.who for r in found.rows]


def test_pages_of_one_merged_list_newest_first(lines):
    first = audit_entries({})
    assert (first.total, first.pages, first.page, first.first) == (245, 3, 1, 1)
    assert whos(first)[:5] == ["apikey:zed-bot"] * 5  # the newest, from the event log
    assert [r.reason for r in first.rows[5:7]] == ["line 239", "line 238"]
    last = audit_entries({"page": "3"})
    assert len(last.rows) == 45 and last.first == 201 and last.rows[-1].reason == "line 0"
    everything = [r for p in (1, 2, 3) for r in audit_entries({"page": str(p)}).rows]
    assert len({(r.who, r.reason, r.at) for r in everything}) == 245  # nothing twice


@pytest.mark.parametrize("page", ["0", "-4", "x", "99"])
def test_a_page_out_of_range_is_the_nearest_one(lines, page):
    found = audit_entries({"page": page})
    assert found.page == (3 if page == "99" else 1)


def test_sort_by_who_case_blind_then_newest_and_oldest_first(lines):
    by_who = [r.who for p in (1, 2, 3) for r in audit_entries({"sort": "who", "page": str(p)}).rows]
    assert by_who == sorted(by_who, key=str.lower)
    assert by_who[0] == "apikey:zed-bot" and by_who[-1] == "operator:cy"
    oldest = audit_entries({"sort": "at"})
    assert oldest.rows[0].reason == "line 0"
    back = audit_entries({"sort": "-who"})
    assert back.rows[0].who == "operator:cy" and back.rows[0].reason == "line 239"


def test_the_page_links_keep_sort_and_filters(op, lines):
    html = op.get("/audit", {"outcome": "ok", "sort": "who", "page": "2"}).content.decode()
    assert "Entries 101\u2013200 of 245 \u00b7 page 2 of 3" in html
    links = dict(re.findall(r'href="(\?[^"]*)" rel="(prev|next)"', html)[i][::-1] for i in (0, 1))
    assert links["prev"] == "?outcome=ok&amp;sort=who&amp;page=1"
    assert links["next"] == "?outcome=ok&amp;sort=who&amp;page=3"
    assert 'aria-sort="ascending"><a class="sort" href="?outcome=ok&amp;sort=-who">Who' in html
    # When: back to newest first (a second click there turns it to oldest first)
    assert 'aria-sort="none"><a class="sort" href="?outcome=ok">When' in html


def test_the_count_stops_a_step_past_the_page_and_says_so(op, lines, monkeypatch):
    """Issue 28: the count reads on past the page asked for to the next multiple of
    AUDIT_COUNT_STEP only (a long log costs no more than its page), and the pager says
    "+" when it stopped; a page past the step counts further, the last is exact."""
    monkeypatch.setattr("dashboard.selectors.AUDIT_COUNT_STEP", 100)
    first = audit_entries({})
    assert (first.total, first.more, first.pages, len(first.rows)) == (200, True, 2, 100)
    html = op.get("/audit").content.decode()
    assert "Entries 1\u2013100 of 200+ \u00b7 page 1 of 2+" in html
    assert 'href="?page=2" rel="next"' in html
    second = audit_entries({"page": "2"})
    assert (second.total, second.more, second.pages, second.first) == (245, False, 3, 101)
    last = audit_entries({"page": "3"})
    assert (last.total, last.more, len(last.rows)) == (245, False, 45)
