"""Where a task came in by: the view entry the board draws its tag from, the task page's
"Came in by", the board's origin filter (and the bulk action's "all matching the
filter"), escaping, and query counts."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from a2a import services
from a2a.models import Task
from agui import selectors as agui_selectors
from dashboard import selectors

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "<img src=x onerror=alert(1)>"
DOORS = {
    "acp": services.Origin("acp", "sess-1", "shop: Roll out 2.14"),
    "agui": services.Origin("agui", "thread-9"),
    "a2a": services.Origin("a2a"),
    "dashboard": services.Origin("dashboard"),
}


@pytest.fixture
def doors(make_task) -> dict[str, Task]:
    """One task per door, plus one from before origins were recorded (blank)."""
    tasks = {door: make_task("working", text=f"from {door}", origin=o) for door, o in DOORS.items()}
    tasks[""] = make_task("working", text="from nowhere in particular")
    return tasks


def entries() -> dict[str, dict]:
    """The board's view entries (what /ws/agui/ sends it), by task id."""
    return {e["taskId"]: e for e in agui_selectors.snapshot()["view"]["tasks"].values()}


def test_the_view_entry_says_where_each_task_came_in(doors):
    """The board draws its origin tag from the entry (static/js/describe.js originLabels)."""
    got = entries()
    assert got[doors["acp"].id]["origin"] == {
        "door": "acp",
        "ref": "sess-1",
        "title": "shop: Roll out 2.14",
    }
    assert got[doors["agui"].id]["origin"] == {"door": "agui", "ref": "thread-9", "title": ""}
    assert got[doors["a2a"].id]["origin"]["door"] == "a2a"
    assert got[doors["dashboard"].id]["origin"]["door"] == "dashboard"
    assert got[doors[""].id]["origin"] is None  # not recorded


def test_the_task_page_says_how_the_task_came_in(op, doors):
    def came_in_by(task: Task) -> str:
        page = op.get(f"/tasks/{task.id}").content.decode()
        found = re.search(r"<dt>Came in by</dt><dd[^>]*>(.*?)</dd>", page)
        return re.sub(r"<[^>]+>", "", html.unescape(found.group(1))) if found else ""

    assert came_in_by(doors["acp"]) == "ACP session — shop: Roll out 2.14 (session sess-1)"
    assert came_in_by(doors["agui"]) == "AG-UI (thread thread-9)"
    assert came_in_by(doors["a2a"]) == "A2A"
    assert came_in_by(doors["dashboard"]) == "Dashboard"
    assert came_in_by(doors[""]) == ""  # not recorded: nothing said
    live = op.get(f"/tasks/{doors['acp'].id}?fragment=1").content.decode()
    assert "shop: Roll out 2.14" in live  # the live refresh keeps it


def test_a_hostile_origin_title_is_escaped_on_both_pages(op, view_only, make_task):
    task = make_task("working", origin=services.Origin("acp", f"sess-{HOSTILE}", HOSTILE))
    pages = {
        "task": op.get(f"/tasks/{task.id}").content.decode(),
        "task fragment": view_only.get(f"/tasks/{task.id}?fragment=1").content.decode(),
    }
    for name, page in pages.items():
        assert HOSTILE not in page, name
        assert "<img" not in page, name
        assert "&lt;img src=x" in page, name
    assert "<img" not in op.get("/").content.decode()
    # the board gets it as data, and writes it with textContent (tests/browser)
    assert entries()[task.id]["origin"]["title"] == HOSTILE


def test_the_origin_filter_narrows_the_board_and_bulk(op, doors, unchanged):
    acp = selectors.Filters.from_query({"origin": "acp"})
    assert [e["taskId"] for e in selectors.matching_entries(acp)] == [doors["acp"].id]
    both = selectors.Filters.from_query({"origin": "agui", "q": "from"})
    assert [e["taskId"] for e in selectors.matching_entries(both)] == [doors["agui"].id]
    assert len(selectors.matching_entries(selectors.Filters())) == 5
    assert acp.describe() == "origin=acp"
    # the same rule the board's JavaScript applies (describe.js `matches`)
    entry = selectors.matching_entries(acp)[0]
    assert selectors.entry_matches(entry, acp)
    assert not selectors.entry_matches({**entry, "origin": None}, acp)
    assert selectors.entry_matches({**entry, "origin": None}, selectors.Filters())

    page = op.get("/", {"origin": "acp"}).content.decode()
    assert '<option value="acp" selected>ACP session</option>' in page
    assert '<input type="hidden" name="origin" value="acp">' in page  # bulk keeps the filter
    with unchanged():
        preview = op.post(
            "/bulk",
            {"action": "pause", "scope": "filter", "origin": "acp", "reason": "freeze"},
        ).content.decode()
    assert "<strong>1</strong> will be paused" in preview
    assert "all tasks matching origin=acp" in preview
    assert re.findall(r'data-task="([^"]+)"', preview) == [doors["acp"].id]
    assert '<input type="hidden" name="origin" value="acp">' in preview


@pytest.mark.parametrize(
    "value", ["x", "ACP", "acp ", "a2a\x00", "' OR 1=1 --", "x" * 100_000, HOSTILE]
)
def test_a_bad_origin_value_matches_nothing_and_never_fails(op, doors, unchanged, value):
    """Like a bad state: kept (NUL removed, cut to 200 characters, trimmed) and matching
    nothing — never everything, since bulk acts on "all matching the filter"."""
    f = selectors.Filters.from_query({"origin": value})
    assert "\x00" not in f.origin and len(f.origin) <= selectors.FILTER_CHARS
    expected = [doors[f.origin].id] if f.origin in DOORS else []
    assert [e["taskId"] for e in selectors.matching_entries(f)] == expected
    response = op.get("/", {"origin": value})
    assert response.status_code == 200
    assert "<img src=x" not in response.content.decode()
    with unchanged():
        bulk = op.post(
            "/bulk", {"action": "cancel", "scope": "filter", "origin": value, "reason": "r"}
        )
    assert bulk.status_code == 200
    assert "<img src=x" not in bulk.content.decode()


def queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


def test_the_board_and_bulk_read_in_a_constant_number_of_queries(op, make_task):
    origin = services.Origin("acp", "sess-1", "shop: Roll out 2.14")
    bulk = {"action": "pause", "scope": "filter", "origin": "acp", "reason": "r"}
    tasks = [make_task("working", origin=origin)]
    few_board = queries(lambda: op.get("/"))
    few_bulk = queries(lambda: op.post("/bulk", bulk))
    tasks += [make_task("working", origin=origin if i % 2 else None) for i in range(12)]
    assert queries(lambda: op.get("/")) == few_board
    assert queries(lambda: op.post("/bulk", bulk)) == few_bulk
