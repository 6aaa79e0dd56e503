"""Issue 15, feature 8: the small things operators use every day on a task's page — copy
buttons for its ids, timeline filters that survive the page's live refresh, and a
collapsible JSON view of what the agent and its clients sent (escaped)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from a2a import services
from tests.browser.conftest import SIZES, live
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]


@pytest.mark.parametrize("size", SIZES)
def test_copy_filter_and_json_view(open_as, operator, start, site, size):
    task = start("ci-wait", "Run the suite for <b>PR 25</b>", build=25)
    wait_state(task.id, "paused-by-agent", timeout=60)
    page = open_as(operator, f"/tasks/{task.id}", viewport=size)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    live(page)

    copy = page.get_by_role("button", name="Copy the task id")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == task.id

    timeline = page.locator("#task-timeline")
    visible = timeline.locator("li.tl:visible")
    timeline.get_by_role("button", name="Messages").click()
    expect(timeline.get_by_role("button", name="Messages")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(visible).to_have_count(1)  # the agent's (the client's first is "Created")
    expect(visible.last).to_contain_text("Agent said")
    timeline.get_by_role("button", name="Decisions").click()
    expect(visible).to_have_count(0)
    expect(timeline.locator(".tl-none")).to_be_visible()
    timeline.get_by_role("button", name="State changes").click()
    states = visible.count()
    assert states >= 3, states  # created, started, parked
    # a change arrives: the region is redrawn and the filter stays
    services.pause_task(task.id, actor=CLIENT, reason="hold on for the freeze")
    expect(visible).to_have_count(states + 1)
    expect(visible.last).to_contain_text("hold on for the freeze")
    expect(timeline.get_by_role("button", name="State changes")).to_have_attribute(
        "aria-pressed", "true"
    )

    view = page.locator("#task-json")
    view.locator("summary").click()
    payload = json.loads(view.locator("pre").inner_text())
    assert payload["taskId"] == task.id and payload["state"] == "paused-by-client"
    assert payload["messages"][0]["parts"][0]["text"] == "Run the suite for <b>PR 25</b>"
    assert view.locator("b").count() == 0  # shown as text, never as markup
    view.get_by_role("button", name="Copy the JSON").click()
    assert json.loads(page.evaluate("navigator.clipboard.readText()"))["taskId"] == task.id
