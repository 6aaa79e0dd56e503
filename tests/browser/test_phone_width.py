"""Issue 15, bug 1: every page is usable on a phone, 360 to 430 px wide. At 390x844 and
360x740 an operator sees no sideways scrolling, the whole top bar (Audit, the live
status, who is signed in, Sign out), board rows as cards whose task and "what it is doing"
are readable, a pause banner that keeps its countdown, inbox forms whose buttons are in
reach and audit entries read as cards. Screenshots (tests/browser/artifacts/phone-*.png,
not committed) are taken at 390 and 1440 px, light and dark."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from dashboard import roles
from dashboard.models import AuditEntry
from tests.browser.conftest import board_tools, live, shot
from tests.dashboard.conftest import make_user
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

PHONES = [pytest.param((390, 844), id="390x844"), pytest.param((360, 740), id="360x740")]


def boxes(page: Page, selectors: dict[str, str]) -> dict[str, dict | None]:
    """The bounding box (left, right, top, bottom, width, height) of the first node each
    selector names, or None when there is none; plus the page's scroll width."""
    return page.evaluate(
        """(sels) => {
            const out = {scrollWidth: document.documentElement.scrollWidth};
            for (const [name, sel] of Object.entries(sels)) {
                const node = document.querySelector(sel);
                if (!node) { out[name] = null; continue; }
                const b = node.getBoundingClientRect();
                out[name] = {left: b.left, right: b.right, top: b.top, bottom: b.bottom,
                             width: b.width, height: b.height};
            }
            return out;
        }""",
        selectors,
    )


def whole(page: Page, name: str) -> None:
    """A screenshot of the whole page. Rows off screen are not painted
    (content-visibility), so the window is made as tall as the page for it."""
    size = dict(page.viewport_size)
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(height, size["height"])})
    shot(page, name)
    page.set_viewport_size(size)


def inside(box: dict | None, width: float) -> bool:
    return bool(box) and box["width"] > 0 and box["left"] >= -0.5 and box["right"] <= width + 0.5


def within(inner: dict | None, outer: dict | None) -> bool:
    return (
        bool(inner and outer)
        and inner["width"] > 0
        and inner["left"] >= outer["left"] - 0.5
        and inner["right"] <= outer["right"] + 0.5
        and inner["top"] >= outer["top"] - 0.5
        and inner["bottom"] <= outer["bottom"] + 0.5
    )


TOPBAR = {
    "board": '.topbar nav a[href="/"]',
    "inbox": '.topbar nav a[href="/inbox"]',
    "demo": '.topbar nav a[href="/demo"]',
    "audit": '.topbar nav a[href="/audit"]',
    "lockouts": '.topbar nav a[href="/lockouts"]',
    "live": "#conn",
    "who": ".who",
    "signout": ".topbar-right button",
}


def assert_fits(page: Page, width: int, extra: dict[str, str] | None = None) -> dict:
    """No sideways scrolling, the whole top bar on screen, and each of `extra` inside the
    window's width; the top bar also with its longest status ("Reconnecting…", what a
    phone on a train shows), put in by hand for the measure and taken out again."""
    live(page)
    wanted = {**TOPBAR, **(extra or {})}
    got = boxes(page, wanted)
    assert got["scrollWidth"] <= width, (page.url, width, got["scrollWidth"])
    off = [name for name in wanted if not inside(got[name], width)]
    assert not off, (page.url, width, {name: got[name] for name in off})
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.evaluate("document.querySelector('#conn .conn-text').textContent = 'Reconnecting…'")
    worst = boxes(page, TOPBAR)
    page.evaluate("document.querySelector('#conn .conn-text').textContent = 'Live'")
    assert worst["scrollWidth"] <= width, (page.url, width, worst["scrollWidth"])
    off = [name for name in TOPBAR if not inside(worst[name], width)]
    assert not off, (page.url, width, "Reconnecting…", {name: worst[name] for name in off})
    return got


@pytest.fixture
def operator(django_user_model, transactional_db):
    """The operator `make run` creates: a longer name than the other tests' "ana"."""
    return make_user(django_user_model, "operator", roles.OPERATORS)


@pytest.fixture
def tasks(start, operator):
    """A parked task with a deadline (its page shows a countdown), a request waiting in
    the inbox, and audit entries with long texts."""
    parked = start("ci-wait", "Run the integration suite for PR 9390 on every platform", build=9390)
    asking = start("approval", "Roll out release 2.16 to production")
    wait_state(parked.id, "paused-by-agent", timeout=60)
    wait_state(asking.id, "input-required", timeout=60)
    for outcome in ("ok", "refused"):
        AuditEntry.objects.create(
            who="operator:operator",
            action="pause",
            task_id=parked.id,
            reason="release freeze while the storage migration runs in every region",
            outcome=outcome,
            at=timezone.now(),
            detail="paused 1 task; skipped 0: " + "a long detail that must wrap " * 4,
        )
    return {"parked": parked, "asking": asking}


@pytest.mark.parametrize("size", PHONES)
def test_board_rows_are_cards_with_a_readable_task_and_line(open_as, operator, tasks, size):
    width = size[0]
    page = open_as(operator, "/", viewport=size)
    board_tools(page)  # folded on a phone: opened, they must fit too
    row = f'#board-rows [data-task="{tasks["parked"].id}"]'
    expect(page.locator(f"{row} .line")).to_contain_text(
        re.compile(r"parked: waiting for ci.build.completed:9390")
    )
    got = assert_fits(
        page,
        width,
        {
            "row": row,
            "title": f"{row} .task-link",
            "line": f"{row} .line",
            "chip": f"{row} .chip",
            "check": f"{row} input[type=checkbox]",
            "search": "#f-q",
            "preview": "#bulk-preview",
        },
    )
    assert got["title"]["width"] > 100 and got["title"]["height"] > 0, got["title"]
    assert got["line"]["width"] > 100 and got["line"]["height"] > 0, got["line"]
    expect(page.locator(f"{row} .task-link")).to_be_visible()
    expect(page.locator(f"{row} .line")).to_be_visible()
    whole(page, f"phone-board-{width}")


@pytest.mark.parametrize("size", PHONES)
def test_the_task_page_keeps_its_countdown_inside_the_banner(open_as, operator, tasks, size):
    width = size[0]
    page = open_as(operator, f"/tasks/{tasks['parked'].id}", viewport=size)
    count = page.locator("#task-banner .deadline-count")
    expect(count).to_have_text(re.compile(r"\d"))  # the countdown has started
    got = assert_fits(
        page,
        width,
        {
            "banner": "#task-banner .banner",
            "count": "#task-banner .deadline-count",
            "until": "#task-banner .deadline .small",
            "title": ".task-title",
            "pause": '[data-action="pause"]',
            "resume": '[data-action="resume"]',
            "emit": '[data-action="emit"]',
        },
    )
    assert within(got["count"], got["banner"]), (got["count"], got["banner"])
    assert within(got["until"], got["banner"]), (got["until"], got["banner"])
    whole(page, f"phone-task-{width}")


@pytest.mark.parametrize("size", PHONES)
def test_the_inbox_answer_form_is_in_reach(open_as, operator, tasks, size):
    width = size[0]
    page = open_as(operator, "/inbox", viewport=size)
    item = f'.inbox-item[data-task="{tasks["asking"].id}"]'
    expect(page.locator(item)).to_be_visible()
    assert_fits(
        page,
        width,
        {
            "item": item,
            "search": "#inbox-q",
            "approve": f"{item} .choice-approve",
            "reject": f"{item} .choice-reject",
            "comment": f"{item} [data-comment]",
            "send": f"{item} button[type=submit]",
        },
    )
    whole(page, f"phone-inbox-{width}")


@pytest.mark.parametrize("size", PHONES)
def test_audit_entries_read_as_cards(open_as, operator, tasks, size):
    width = size[0]
    page = open_as(operator, "/audit", viewport=size)
    first = "table.audit tbody tr:first-child"
    expect(page.locator(first)).to_contain_text("release freeze")
    got = assert_fits(
        page,
        width,
        {
            "row": first,
            "when": f"{first} td:nth-child(1)",
            "task": f"{first} td:nth-child(4)",
            "reason": f"{first} td:nth-child(5)",
            "outcome": f"{first} .outcome",
            "detail": f"{first} td.detail-cell",
            "filter": ".filters button[type=submit]",
        },
    )
    # every cell of an entry on screen at once: nothing to scroll sideways inside the table
    assert got["reason"]["width"] > 150 and got["detail"]["width"] > 150, got
    # each value says what it is, since the column headers are not beside it
    labels = page.locator(first).evaluate(
        "tr => [...tr.cells].map(td => getComputedStyle(td, '::before').content)"
    )
    heads = ["When", "Who", "Action", "Task", "Reason", "Outcome", "Detail"]
    assert labels == [f'"{h}"' for h in heads], labels
    expect(page.locator("table.audit th").first).to_be_visible()  # it names the time zone
    whole(page, f"phone-audit-{width}")


@pytest.mark.parametrize("size", PHONES)
def test_the_demo_launcher_fits(open_as, operator, size):
    width = size[0]
    page = open_as(operator, "/demo", viewport=size)
    assert_fits(
        page,
        width,
        {"guided": "#start-guided", "card": ".demo-card", "start": ".demo-card .btn"},
    )
    whole(page, f"phone-demo-{width}")


@pytest.mark.parametrize("size", PHONES)
def test_the_sign_in_page_fits(browser, site, size):
    context = browser.new_context(base_url=site, viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    page.goto("/login/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    got = boxes(page, {"card": ".login-card", "password": "#id_password", "button": "button"})
    context.close()
    assert got["scrollWidth"] <= size[0], got
    assert all(inside(got[k], size[0]) for k in ("card", "password", "button")), got


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screens_at_phone_and_desktop_width(open_as, operator, tasks, scheme):
    """The pages at 390 and 1440 px, for a person to look at; at 1440 px the desktop
    layout stays: board and audit columns side by side under visible headers."""
    pages = {
        "board": "/",
        "task": f"/tasks/{tasks['parked'].id}",
        "inbox": "/inbox",
        "audit": "/audit",
        "demo": "/demo",
    }
    for width, height in ((390, 844), (1440, 900)):
        page = open_as(operator, "/", viewport=(width, height), scheme=scheme)
        for name, path in pages.items():
            page.goto(path)
            live(page)
            if name == "task":
                expect(page.locator(".deadline-count")).to_have_text(re.compile(r"\d"))
            if name == "board":
                expect(page.locator("#board-rows .row")).to_have_count(2)
            whole(page, f"phone-{scheme}-{name}-{width}")
            if width == 1440:
                got = boxes(
                    page,
                    {"head": ".row-head", "th": "table.audit th", "banner": ".banner .deadline"},
                )
                if name == "board":
                    row = page.locator("#board-rows .row").first
                    heights = row.evaluate(
                        "r => [...r.children].map(c => c.getBoundingClientRect().top)"
                    )
                    assert max(heights) - min(heights) < 30, heights  # one line of cells
                    assert got["head"]["height"] > 20, got["head"]
                if name == "audit":
                    assert got["th"]["height"] > 20, got["th"]
