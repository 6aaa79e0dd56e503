"""Issue 15: the board's chip says what the task page says — a task that completed after
its approval was rejected is "Completed · rejected", in the rejected colour, not a plain
green "Completed". Real workers run the approval agent; the answer goes in as an A2A
client's would."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from a2a import services
from a2a.models import Task
from tests.browser.conftest import SIZES
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def answer(task: Task, decision: str) -> None:
    task.refresh_from_db()
    request_id = task.input_request["requestId"]
    data = {"type": "a2a.input.response", "requestId": request_id,
            "values": {"decision": {"decision": decision, "comment": "not now"}}}  # fmt: skip
    services.add_message(
        task.id,
        services.IncomingMessage(
            message_id=f"a-{request_id}", parts=[{"kind": "data", "data": data}]
        ),
        actor=CLIENT,
    )


@pytest.mark.parametrize("size", SIZES)
def test_a_rejected_then_completed_task_reads_rejected_on_the_board(open_as, operator, start, size):
    rejected = start("approval", "Roll out 2.17")
    approved = start("approval", "Roll out 2.18")
    for task in (rejected, approved):
        wait_state(task.id, "input-required", timeout=60)
    page = open_as(operator, "/", viewport=size)
    answer(rejected, "reject")
    answer(approved, "approve")
    for task in (rejected, approved):
        wait_state(task.id, "completed", timeout=60)
    chip = page.locator(f'[data-task="{rejected.id}"] .chip')
    expect(chip).to_have_text("Completed · rejected")
    expect(chip).to_have_attribute("data-outcome", "rejected")
    plain = page.locator(f'[data-task="{approved.id}"] .chip')
    expect(plain).to_have_text("Completed")
    expect(plain).not_to_have_attribute("data-outcome", "rejected")
    page.reload()  # the opening snapshot carries it too, not only the live delta
    expect(page.locator(f'[data-task="{rejected.id}"] .chip')).to_have_text("Completed · rejected")
