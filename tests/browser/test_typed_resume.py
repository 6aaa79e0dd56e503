"""Issue 15, feature 6 in the browser, with the real budget agent: it pauses itself when
its budget is spent and says it expects an extra budget back; the operator types one
into the field the form shows (no JSON), a wrong value is refused beside the field, and
the agent goes on with the new budget."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from a2a.models import Task
from tests.browser.conftest import live
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_the_budget_agent_is_resumed_with_a_typed_budget(open_as, operator, start, size):
    task = start("budget", "Research three vendors", budget=100)
    wait_state(task.id, "paused-by-client", timeout=60)
    page = open_as(operator, f"/tasks/{task.id}", viewport=size)
    live(page)
    form = page.locator("form", has=page.get_by_role("button", name="Resume"))
    extra = form.get_by_label("Extra budget (tokens)")
    expect(extra).to_be_visible()
    expect(form.locator('textarea[name="resume_input"]')).to_have_count(0)
    extra.fill("a lot")
    form.get_by_role("button", name="Resume").click()
    expect(form.locator(".field-error")).to_contain_text("must be an integer")
    expect(form.get_by_label("Extra budget (tokens)")).to_have_value("a lot")
    assert Task.objects.get(pk=task.id).state == "paused-by-client"
    form.get_by_label("Extra budget (tokens)").fill("1000")
    form.get_by_role("button", name="Resume").click()
    wait_state(task.id, "completed", timeout=60)
    expect(page.locator("#task-timeline")).to_contain_text("budget is now 1100")
