"""Issue 15: every page passes axe-core (WCAG 2.1 A and AA rules), light and dark, at
phone and desktop width; and the dark scheme is really dark, with the same states told
apart by the same hues.

axe-core comes from npm (`make test-tools`, into .test-tools/). The pages do not depend on
the database, so this runs in the SQLite lane only (marked `pages`; see the Makefile: the
suite's time is close to its budget)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import Page, expect

from a2a import services
from tests.browser.conftest import board_tools, live
from tests.browser.test_phone_width import tasks  # noqa: F401
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

AXE = Path(__file__).resolve().parents[2] / ".test-tools/node_modules/axe-core/axe.min.js"
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
RUN_AXE = """async (tags) => {
    const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
    return result.violations.map(v => ({
        rule: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 3).map(n => n.target.join(" ") + " :: " + n.failureSummary),
    }));
}"""


@pytest.fixture(autouse=True)
def _needs_axe_and_sqlite():
    if connection.vendor != "sqlite":
        pytest.skip("pages are the same on both databases: axe runs in the SQLite lane")
    if not AXE.exists():
        pytest.skip(f"{AXE} is missing (make test-tools installs it)")


def violations(page: Page) -> list[dict]:
    """axe's WCAG 2.1 A/AA violations on the page as it is now. (axe is put into every
    document of the context by add_init_script, through the DevTools protocol: the pages'
    CSP rightly refuses an injected <script>.)"""
    return page.evaluate(RUN_AXE, RULES)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_every_page_passes_axe(open_as, browser, site, operator, tasks, start, scheme, size):  # noqa: F811
    pages = {
        "board": "/",
        "task-parked": f"/tasks/{tasks['parked'].id}",
        "task-asking": f"/tasks/{tasks['asking'].id}",
        "inbox": "/inbox",
        "audit": "/audit",
        "alerts": "/alerts",
        "demo": "/demo",
        "history": "/history",
        "history-search": f"/history?q={tasks['asking'].id[:8]}&state=open",
    }
    found = {}
    page = open_as(operator, "/", viewport=size, scheme=scheme)
    page.context.add_init_script(path=str(AXE))
    for name, path in pages.items():
        page.goto(path)
        live(page)
        if name == "board":
            expect(page.locator("#board-rows .row")).to_have_count(2)
        if problems := violations(page):
            found[name] = problems
    # an ended task (issue 29): why it ended, its Retry and Re-run buttons, and the links
    # between it and its retry
    broken = start("flaky", "Summarise the incident")
    wait_state(broken.id, "failed")
    retried = services.rerun_task(broken.id, actor=services.SYSTEM, kind=services.RETRY)
    for name, path in {"task-failed": broken.id, "task-retry": retried.id}.items():
        page.goto(f"/tasks/{path}")
        live(page)
        if problems := violations(page):
            found[name] = problems
    # the bulk preview (a page reached by POST): every task matching the board's filter
    page.goto("/")
    board_tools(page)
    page.locator("#bulk-scope-filter").check()
    page.locator("#bulk-reason").fill("release freeze")
    page.locator("#bulk-preview").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Pause")
    if problems := violations(page):
        found["bulk-preview"] = problems
    signed_out = browser.new_context(
        base_url=site, viewport={"width": size[0], "height": size[1]}, color_scheme=scheme
    )
    try:
        signed_out.add_init_script(path=str(AXE))
        login = signed_out.new_page()
        login.goto("/login/")
        if problems := violations(login):
            found["login"] = problems
    finally:
        signed_out.close()
    assert not found, found


def _rgb(page: Page, selector: str, prop: str) -> tuple[float, ...]:
    """A computed colour as (r, g, b) in 0..255, whatever syntax Chromium reports it in
    (color-mix() results come as color(srgb …))."""
    node = page.locator(selector).first
    return tuple(
        node.evaluate(
            """(node, prop) => {
                const c = document.createElement("canvas").getContext("2d");
                c.fillStyle = getComputedStyle(node)[prop];
                c.fillRect(0, 0, 1, 1);
                return [...c.getImageData(0, 0, 1, 1).data].slice(0, 3);
            }""",
            prop,
        )
    )


def _luminance(rgb: tuple[float, ...]) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _hue(rgb: tuple[float, ...]) -> float:
    import colorsys

    return colorsys.rgb_to_hsv(*(v / 255 for v in rgb))[0] * 360


def test_dark_scheme_is_dark_and_keeps_each_states_hue(open_as, operator, tasks):  # noqa: F811
    wait_state(tasks["parked"].id, "paused-by-agent", timeout=60)
    seen = {}
    for scheme in ("light", "dark"):
        page = open_as(operator, "/", scheme=scheme)
        live(page)
        expect(page.locator("#board-rows .row")).to_have_count(2)
        seen[scheme] = {
            "page": _rgb(page, "body", "backgroundColor"),
            "text": _rgb(page, "body", "color"),
            "parked": _rgb(page, '.row[data-state="paused-by-agent"] .chip', "color"),
            "asking": _rgb(page, '.row[data-state="input-required"] .chip', "color"),
        }
        # axe leaves state chips and the timeline "incomplete" (their ::before dots hide
        # the background from it): their contrast is measured here, on the task page too
        for path in ("/", f"/tasks/{tasks['parked'].id}"):
            page.goto(path)
            live(page)
            chips = page.locator(".chip").count()
            assert chips >= 2, path
            for i in range(chips):
                sel = f":nth-match(.chip, {i + 1})"
                text, back = _rgb(page, sel, "color"), _rgb(page, sel, "backgroundColor")
                assert _contrast(text, back) >= 4.5, (scheme, path, i, text, back)
    light, dark = seen["light"], seen["dark"]
    assert _luminance(light["page"]) > 0.8 and _luminance(dark["page"]) < 0.05, seen
    assert _luminance(dark["text"]) > 0.7, seen
    for state in ("parked", "asking"):  # same hue family in both schemes (within 25°)
        gap = abs(_hue(light[state]) - _hue(dark[state])) % 360
        assert min(gap, 360 - gap) < 25, (state, light[state], dark[state])
