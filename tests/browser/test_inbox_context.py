"""Issue 15, feature 2, in the browser: a request that arrives live brings what it asks
to approve (the agent's plan) and, one keypress away, what led there."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import live
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_live_request_brings_its_plan_and_its_recent_timeline(open_as, operator, start, size):
    page = open_as(operator, "/inbox", viewport=size)
    live(page)
    task = start("approval", "Roll out 2.24")
    wait_state(task.id, "input-required", timeout=60)
    item = page.locator(f'.inbox-item[data-task="{task.id}"]')
    expect(item).to_be_visible(timeout=20_000)  # arrived live, no reload
    plan = item.locator(".item-artifact")
    expect(plan.locator("figcaption")).to_contain_text("plan.md")
    expect(plan.locator("pre")).to_contain_text("Schedule the change for Roll out 2.24")
    recent = item.locator(".item-recent")
    expect(recent.locator("ol")).to_be_hidden()
    recent.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(recent.locator("ol")).to_be_visible()
    expect(recent.locator("li").last).to_contain_text("Asked: Approve the plan")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= size[0], width  # the plan wraps; nothing scrolls sideways
