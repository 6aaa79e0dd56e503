"""History (issue 29, item 2) in the browser: a task canceled a moment ago, gone from the
board's live view, is found from the board's "Search all tasks" link and by its words,
its id and who canceled it, at desktop and phone width, light and dark; the URL is the
search (reloading or sharing it shows the same)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from a2a import services
from agui.models import ViewTask
from tests.browser.conftest import board_tools, shot
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)
ANA = services.Actor("operator", "ana")


@pytest.fixture
def canceled(start):
    """A task an operator canceled, no longer in the board's live view."""
    task = start("approval", "Migrate the billing ledger to the new region")
    wait_state(task.id, "input-required", timeout=60)
    services.cancel_task(task.id, actor=ANA, reason="ledger freeze until the audit ends")
    other = start("approval", "Rotate the signing keys")
    wait_state(other.id, "input-required", timeout=60)
    ViewTask.objects.filter(task_id=task.id).update(in_view=False)  # evicted, as after hours
    return task


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_canceled_task_is_found_from_the_board(open_as, operator, canceled, size, scheme):
    page = open_as(operator, "/", viewport=size, scheme=scheme)
    board_tools(page)  # a phone folds the filters, the search box with them
    page.locator("#f-q").fill("ledger freeze")
    expect(page.locator(f'#board-rows [data-task="{canceled.id}"]')).to_have_count(0)
    page.locator("#f-history").click()
    expect(page).to_have_url("/history?q=ledger+freeze")
    row = page.locator("#history-rows .history-row")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Migrate the billing ledger to the new region")
    expect(row).to_contain_text(canceled.id)
    expect(row.locator(".chip")).to_have_text("Canceled")
    expect(page.locator("#history-summary")).to_contain_text("1 task match")
    shot(page, f"history-{'phone' if size[0] < 700 else 'desktop'}-{scheme}")
    # by who acted and the state, typed into the form: the URL holds the search
    page.locator("#h-q").fill(canceled.id[:8])
    page.locator("#h-who").fill("operator:ana")
    page.locator("#h-state").select_option("finished")
    page.locator("#h-q").press("Enter")
    expect(row).to_have_count(1)
    page.reload()
    expect(page.locator("#h-who")).to_have_value("operator:ana")
    expect(page.locator("#h-state")).to_have_value("finished")
    expect(row).to_have_count(1)
    row.locator(".task-link").click()
    expect(page).to_have_url(f"/tasks/{canceled.id}")
    # on a phone the first screen shows the first task found
    if size[0] < 700:
        page.goto(f"/history?q={canceled.id}")
        box = page.locator("#history-rows .history-row").bounding_box()
        assert box is not None and box["y"] < size[1]


def test_nothing_found_says_how_words_match(open_as, operator, canceled):
    page = open_as(operator, "/history?q=nosuchword")
    expect(page.locator("#history-rows")).to_contain_text("No task matches this search")
    expect(page.locator("#history-summary")).to_contain_text("0 tasks match")
