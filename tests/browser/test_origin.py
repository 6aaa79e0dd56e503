"""Where a task came in by, in a real browser: an ACP task started while the board is open
gets its origin marker as soon as its row appears, an editor's suspend shows live with its
reason, long session titles are cut with an ellipsis (the full one in the title), and the
origin filter narrows the board; at 390 and 1440 pixels wide."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from a2a import services
from dashboard.selectors import Filters, entry_matches
from tests.browser.conftest import ARTIFACTS, CLOCK, shot
from tests.conftest import CLIENT, user_message
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)

EDITOR = services.Actor("apikey", "zed")
LONG = "shop: " + "Roll out 2.14 to every region, then watch the error budget " * 3
WIDTHS = (1440, 390)


def begin(skill: str, text: str, origin: services.Origin | None, **metadata):
    return services.create_task(
        user_message(text),
        actor=CLIENT,
        skill=skill,
        metadata={"skill": skill, **metadata},
        origin=origin,
    )


def row(page, task_id: str):
    return page.locator(f'#board-rows [data-task="{task_id}"]')


def whole(page, name: str) -> None:
    """A screenshot of the whole page at this width. Rows off screen are not painted
    (content-visibility), so the window is made as tall as the page for it."""
    width = page.viewport_size["width"]
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": width, "height": height})
    shot(page, name)
    page.set_viewport_size({"width": width, "height": 900})


def fits(page, selector: str) -> dict:
    """Whether the page scrolls sideways, and where `selector` sits against its row."""
    return page.evaluate(
        """(sel) => {
            const node = document.querySelector(sel);
            const box = node.getBoundingClientRect();
            const rowBox = node.closest('.row').getBoundingClientRect();
            const cell = node.closest('[role=cell]').getBoundingClientRect();
            return {
                sideways: document.documentElement.scrollWidth > innerWidth,
                inCell: box.left >= cell.left - 0.5 && box.right <= cell.right + 0.5,
                rowFits: rowBox.right <= innerWidth + 0.5,
                cut: node.scrollWidth > node.clientWidth,
                visible: box.width > 0 && box.height > 0,
            };
        }""",
        selector,
    )


def test_an_acp_task_shows_its_origin_and_an_editor_suspend_live(
    open_as, operator, viewer, runtime
):
    older = begin("scheduled", "Post the daily digest", services.Origin("a2a"), minutes=60)
    long = begin(
        "scheduled", "Roll out everywhere", services.Origin("acp", "sess-0", LONG), minutes=60
    )
    page = open_as(operator, "/")
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(page.locator("#conn")).to_have_attribute("data-status", "live")
    expect(row(page, older.id).locator(".origin-text")).to_have_text("A2A")

    # started after the board was drawn: its row (and tag) arrive with the live view
    acp = begin(
        "batch",
        "Roll out 2.14",
        services.Origin("acp", "sess-1", "shop: Roll out 2.14"),
        items=400,
        pace=4,
    )
    marker = row(page, acp.id).locator(".origin")
    expect(marker.locator(".origin-text")).to_have_text("ACP · shop: Roll out 2.14")
    expect(marker).to_have_attribute("title", "Came from an ACP session: shop: Roll out 2.14")
    expect(marker.locator(".sr-only")).to_have_text("Came from an ACP session: shop: Roll out 2.14")
    wait_state(acp.id, "working")

    # a suspend from the editor (what the ACP door's session/suspend calls)
    services.pause_task(
        acp.id,
        actor=EDITOR,
        reason="release freeze",
        metadata={"via": "acp", "sessionId": "sess-1"},
    )
    expect(row(page, acp.id).locator(".line")).to_contain_text(
        re.compile(rf"paused by apikey:zed: release freeze — since {CLOCK}")
    )
    expect(row(page, acp.id).locator(".chip")).to_have_text("Paused")
    expect(row(page, acp.id).locator(".origin-text")).to_have_text("ACP · shop: Roll out 2.14")

    long_marker = row(page, long.id).locator(".origin")
    expect(long_marker).to_have_attribute("title", f"Came from an ACP session: {LONG}")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        whole(page, f"origin-board-{width}")
        for task in (acp, long):
            got = fits(page, f'#board-rows [data-task="{task.id}"] .origin')
            assert got["visible"] and got["inCell"] and got["rowFits"], (width, got)
            assert not got["sideways"], (width, got)
        assert fits(page, f'#board-rows [data-task="{long.id}"] .origin')["cut"], width

    # the filter: only tasks that came from ACP sessions, kept in the URL
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_label("Came in by").select_option("acp")
    expect(page).to_have_url(re.compile(r"\?origin=acp$"))
    expect(page.locator("#board-rows .row:visible")).to_have_count(2)
    expect(row(page, older.id)).to_be_hidden()
    page.reload()
    expect(page.locator("#f-origin")).to_have_value("acp")
    expect(page.locator("#board-rows .row:visible")).to_have_count(2)

    # a viewer's rows have no checkbox column: the same card at 390 px
    watcher = open_as(viewer, "/")
    watcher.set_viewport_size({"width": 390, "height": 900})
    expect(row(watcher, acp.id).locator(".origin-text")).to_have_text("ACP · shop: Roll out 2.14")
    got = fits(watcher, f'#board-rows [data-task="{acp.id}"] .origin')
    assert got["visible"] and got["inCell"] and got["rowFits"] and not got["sideways"], got
    whole(watcher, "origin-board-390-viewer")

    # the board's rule is the server's (bulk "all matching the filter" uses that one)
    def entry(door):
        origin = {"door": door, "ref": "", "title": ""} if door else None
        return {"taskId": acp.id, "status": "paused-by-client", "origin": origin}

    cases = [("acp", "acp"), ("acp", ""), ("", ""), ("", "agui"), ("x", "acp")]
    got = page.evaluate(
        """async (cases) => {
            const m = await import('/static/js/describe.js');
            return cases.map(([f, e]) => m.matches(e, {origin: f}));
        }""",
        [[f, entry(door)] for f, door in cases],
    )
    assert got == [entry_matches(entry(door), Filters(origin=f)) for f, door in cases]
    assert got == [True, False, True, True, False]

    page.goto(f"/tasks/{acp.id}")
    expect(page.locator("#task-origin")).to_have_text(
        "ACP session — shop: Roll out 2.14 (session sess-1)"
    )
    expect(page.locator("#task-banner")).to_contain_text("release freeze")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        assert not page.evaluate("document.documentElement.scrollWidth > innerWidth"), width
        whole(page, f"origin-task-{width}")
    for name in ("board", "task"):
        for width in WIDTHS:
            assert (ARTIFACTS / f"origin-{name}-{width}.png").stat().st_size > 0
