"""Issue 15: the board's chip says what the task page says — a task that completed after
its approval was rejected is "Completed · rejected", in the rejected colour, not a plain
green "Completed". Real workers run the approval agent; the answer goes in as an A2A
client's would."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SIZES
from tests.conftest import answer
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("size", SIZES)
def test_a_rejected_then_completed_task_reads_rejected_on_the_board(open_as, operator, start, size):
    rejected = start("approval", "Roll out 2.17")
    approved = start("approval", "Roll out 2.18")
    for task in (rejected, approved):
        wait_state(task.id, "input-required", timeout=60)
    page = open_as(operator, "/", viewport=size)
    answer(rejected, {"decision": {"decision": "reject", "comment": "not now"}})
    answer(approved, {"decision": {"decision": "approve", "comment": "not now"}})
    for task in (rejected, approved):
        wait_state(task.id, "completed", timeout=60)
    chip = page.locator(f'[data-task="{rejected.id}"] .chip')
    expect(chip).to_have_text("Completed · rejected")
    expect(chip).to_have_attribute("data-outcome", "rejected")
    # who rejected it, and why, before the agent's last words (issue 29)
    expect(page.locator(f'[data-task="{rejected.id}"] .line')).to_contain_text(
        "Rejected by client:test: “not now” — the agent stood down"
    )
    plain = page.locator(f'[data-task="{approved.id}"] .chip')
    expect(plain).to_have_text("Completed")
    expect(plain).not_to_have_attribute("data-outcome", "rejected")
    page.reload()  # the opening snapshot carries it too, not only the live delta
    expect(page.locator(f'[data-task="{rejected.id}"] .chip')).to_have_text("Completed · rejected")
