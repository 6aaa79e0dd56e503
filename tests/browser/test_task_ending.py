"""Issue 29, "why it ended" and "re-run", in a real browser at both sizes, light and dark:
the task page's banner and the board's live row say how a task ended before the agent's
last words; "Retry from the failed step" and "Re-run" make a new task linked both ways.
Screenshots: tests/browser/artifacts/ending-*.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from a2a import services
from a2a.auth import user_actor
from a2a.models import Task
from tests.browser.conftest import SIZES, live, shot
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", SIZES)
def test_the_banner_and_the_board_say_why_and_retry_links_both_ways(
    open_as, operator, start, size, scheme
):
    name = f"{'phone' if size[0] < 700 else 'desktop'}-{scheme}"
    broken = start("flaky", "Summarise the incident")  # fails after its first step
    batch = start("batch", "Re-render 200 thumbnails", items=200)
    wait_state(broken.id, "failed")
    wait_state(batch.id, "working")

    board = open_as(operator, "/", viewport=size, scheme=scheme)
    live(board)
    services.cancel_task(batch.id, actor=user_actor(operator), reason="wrong bucket")
    line = board.locator(f'#board-rows [data-task="{batch.id}"] .line')
    expect(line).to_contain_text(
        re.compile(r"^Canceled by operator:ana: wrong bucket \(.+\) — last words: Processing")
    )
    failed_line = board.locator(f'#board-rows [data-task="{broken.id}"] .line')
    expect(failed_line).to_contain_text("The agent's error: ValueError: the model returned garbage")
    expect(failed_line).not_to_contain_text("last words")  # the error is said once
    shot(board, f"ending-board-{name}")

    page = open_as(operator, f"/tasks/{broken.id}", viewport=size, scheme=scheme)
    live(page)
    expect(page.locator("#task-ending")).to_have_text(
        "The agent's error: ValueError: the model returned garbage"
    )
    retry = page.get_by_role("button", name="Retry from the failed step")
    rerun = page.get_by_role("button", name="Re-run")
    expect(retry).to_be_visible()
    expect(rerun).to_be_visible()
    expect(page.locator("#retry-h + .help")).to_contain_text("replays the 1 step")
    shot(page, f"ending-failed-{name}")

    retry.click()
    new = Task.objects.get(rerun_of_id=broken.id)
    expect(page).to_have_url(re.compile(rf"/tasks/{re.escape(new.id)}$"))
    expect(page.locator("#rerun-of")).to_contain_text(broken.id[:8])
    expect(page.get_by_text("Retry of", exact=True)).to_be_visible()
    live(page)
    wait_state(new.id, "failed")  # flaky fails again, after replaying its step
    expect(page.locator("#task-head .chip")).to_have_text("Failed", timeout=20_000)
    shot(page, f"ending-retry-{name}")

    page.goto(f"/tasks/{batch.id}")
    expect(page.locator("#task-ending")).to_have_text("Canceled by operator:ana: wrong bucket")
    expect(page.locator("#task-banner")).to_contain_text("The agent\u2019s last words: Processing")
    expect(page.get_by_role("button", name="Retry from the failed step")).to_have_count(0)
    page.get_by_role("button", name="Re-run").click()
    again = Task.objects.get(rerun_of_id=batch.id)
    expect(page).to_have_url(re.compile(rf"/tasks/{re.escape(again.id)}$"))
    page.goto(f"/tasks/{batch.id}")
    expect(page.locator("#reruns")).to_contain_text(again.id[:8])
    shot(page, f"ending-canceled-{name}")


def test_a_viewer_sees_why_but_no_buttons(open_as, viewer, start):
    broken = start("flaky", "Summarise the incident")
    wait_state(broken.id, "failed")
    page = open_as(viewer, f"/tasks/{broken.id}", viewport=(390, 844))
    expect(page.locator("#task-ending")).to_contain_text("The agent's error")
    expect(page.get_by_role("button", name="Re-run")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry from the failed step")).to_have_count(0)
