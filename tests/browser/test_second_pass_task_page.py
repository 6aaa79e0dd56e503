"""Issue 15, "Operator dashboard, second pass", in a real browser: after a refused form on
a task page (bad JSON in Resume input, Cancel without a reason) the page is still the
task's page — its address is /tasks/<id> and it keeps following the task live — and no
empty alert box sits above the actions. (The server-side halves of the issue are in
tests/dashboard/test_second_pass.py.)"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from a2a import services
from tests.browser.conftest import live
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def refuse_resume(page: Page) -> None:
    page.get_by_label("Resume input (JSON, optional)").fill('{"budget": ')
    page.locator('[data-action="resume"]').click()
    expect(page.locator("#task-actions .field-error").first).to_contain_text("Not valid JSON")


def refuse_cancel(page: Page) -> None:
    page.get_by_text("Cancel this task…").click()
    page.locator('[data-action="cancel"]').click()
    expect(page.locator("#cancel-reason-err")).to_have_text(
        "Give a reason: it is recorded with the action."
    )


@pytest.mark.parametrize(("refuse", "build"), [(refuse_resume, 9151), (refuse_cancel, 9152)])
def test_after_a_refused_form_the_task_page_keeps_its_address_and_stays_live(
    open_as, operator, start, refuse, build
):
    task = start("ci-wait", f"Run the integration suite for PR {build}", build=build)
    wait_state(task.id, "paused-by-agent")
    page = open_as(operator, f"/tasks/{task.id}")
    live(page)
    refuse(page)
    expect(page).to_have_url(re.compile(rf"/tasks/{re.escape(task.id)}$"))
    expect(page.locator("#task-actions [role=alert]")).to_have_count(0)
    expect(page.locator("#task-head .chip")).to_have_text("Parked")
    live(page)

    services.emit_event(f"ci.build.completed:{build}", {"status": "green"}, actor=services.SYSTEM)
    wait_state(task.id, "completed")
    expect(page.locator("#task-head .chip")).to_have_text("Completed", timeout=20_000)
    expect(page.locator("#task-banner .banner")).to_contain_text(f"Build {build}: green")

    page.reload()  # the address is the task's own: a reload shows it, no 405, no re-post
    expect(page.locator("#task-head .chip")).to_have_text("Completed")
