"""Issue 29, items 11 and 12 on the board and the inbox: on a phone the board's first
screen shows tasks (filters and bulk folded behind one control); a task that completed
after its approval was rejected is counted and filtered as Rejected, as its row says;
the inbox searches as one types; without JavaScript the board lists tasks and says live
updates need it. At 1440x900 and 390x844, light and dark; screenshots in
tests/browser/artifacts/."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from a2a import services
from a2a.models import Task
from tests.browser.conftest import ARTIFACTS, live, shot
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

LOOKS = [((1440, 900), "light"), ((1440, 900), "dark"), ((390, 844), "light"), ((390, 844), "dark")]


def test_board_and_inbox_first_screens(open_as, operator, start, browser, site):
    alpha = start("approval", "Roll out alpha")
    beta = start("approval", "Roll out beta")
    gamma = start("approval", "Roll out gamma")
    for task in (alpha, beta, gamma):
        wait_state(task.id, "input-required", timeout=60)
    # the request as the task keeps it (its Interrupt row is projected after the commit)
    asked = Task.objects.get(pk=gamma.id).input_request["requestId"]
    services.answer_input(
        gamma.id, asked, {"decision": {"decision": "reject", "comment": "not now"}},
        actor=CLIENT, via="test",
    )  # fmt: skip
    wait_state(gamma.id, "completed", timeout=60)

    for size, scheme in LOOKS:
        name = f"{scheme}-{size[0]}"
        page = open_as(operator, "/", viewport=size, scheme=scheme)
        live(page)
        tools = page.locator("#board-tools")
        filters = page.locator("#filters")
        rejected = page.locator('.count[data-state="rejected"] .count-n')
        expect(rejected).to_have_text("1")  # the row reads "Completed · rejected"
        first_row = page.locator("#board-rows .row").first
        expect(first_row).to_be_visible()
        if size[0] < 700:
            expect(filters).to_be_hidden()  # folded: the tasks come first
            box = first_row.bounding_box()
            assert box and box["y"] < size[1], (name, box)
            page.screenshot(path=str(ARTIFACTS / f"board-first-screen-{name}.png"))
            tools.locator("summary").click()
            expect(filters).to_be_visible()
        else:
            expect(tools.locator("summary")).to_be_hidden()
            expect(filters).to_be_visible()
        page.locator("#f-state").select_option("rejected")
        rows = page.locator("#board-rows .row")
        expect(rows).to_have_count(1)
        expect(rows.first.locator(".chip")).to_have_text("Completed · rejected")
        if size[0] < 700:
            expect(tools.locator("#tools-note")).to_contain_text("state: rejected")
        shot(page, f"board-first-screen-filtered-{name}")

        inbox = open_as(operator, "/inbox", viewport=size, scheme=scheme)
        live(inbox)
        items = inbox.locator("#pending-list .inbox-item")
        expect(items).to_have_count(2)
        inbox.locator("#inbox-q").press_sequentially("beta")  # no Enter
        expect(items).to_have_count(1)
        expect(items.first).to_contain_text("Roll out beta")
        assert "q=beta" in inbox.url
        shot(inbox, f"inbox-live-search-{name}")

    # without JavaScript: server-drawn rows, and the status says live updates need it
    client = Client()
    client.force_login(operator)
    context = browser.new_context(base_url=site, java_script_enabled=False)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site}]
    )
    try:
        page = context.new_page()
        page.goto("/")
        shot(page, "board-without-javascript")
        # (Playwright's text and role engines skip <noscript>: read what is rendered)
        said = page.evaluate("document.body.innerText")
        assert "No live updates: they need JavaScript" in said and "Connecting" not in said
        assert "live updates need JavaScript" in said
        links = page.evaluate("[...document.querySelectorAll('.static-row a')].map(a => a.text)")
        assert {"Roll out alpha", "Roll out beta", "Roll out gamma"} <= set(links)
    finally:
        context.close()
