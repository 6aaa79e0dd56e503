"""A third-party ACP agent hosted as a skill, end to end in the browser: the example agent
of @agentclientprotocol/sdk@1.9.0 (npm), started from the demo launcher, paused and
resumed from its task page, its permission request answered from the inbox."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from a2a.event_kinds import EventKind
from a2a.models import TaskEvent
from tests.browser.conftest import live, shot
from tests.runtime.conftest import wait_for, wait_state


def test_example_agent_launched_paused_resumed_and_its_permission_answered(open_as, operator):
    page = open_as(operator, "/demo")
    launcher = page.locator('[data-start="acp-example"]')
    expect(launcher).to_be_visible()
    launcher.click()
    task_id = page.locator("#task-live").get_attribute("data-task")
    live(page)
    timeline = page.locator("#task-timeline")
    expect(timeline).to_contain_text("I'll help you with that", timeout=20_000)

    # a standard agent: the page says what "Stop now" would cost; finish_step holds its words
    expect(page.locator("#pause-mode-acp")).to_contain_text("turn\u2019s work is lost")
    page.get_by_label("Reason for the pause").fill("check the config first")
    page.locator('[data-action="pause"]').click()
    expect(page.locator("#task-head .chip")).to_have_text("Paused")
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task_id, kind=EventKind.TOOL_CALL,
                                         data__status="completed").exists(),
        20, "its first tool call to complete while paused",
    )  # fmt: skip
    expect(timeline).to_contain_text("Tool: Reading project files")
    expect(timeline).not_to_contain_text("Now I understand")  # held while paused
    shot(page, "hosted-acp-paused")
    page.locator('[data-action="resume"]').click()
    expect(timeline).to_contain_text("Now I understand the project structure", timeout=20_000)
    wait_state(task_id, "input-required", timeout=20)

    inbox = open_as(operator, "/inbox")
    live(inbox)
    item = inbox.locator(f'.inbox-item[data-task="{task_id}"]')
    expect(item).to_contain_text("Allow: Modifying critical configuration file")
    expect(item).to_contain_text("Allow this change, Skip this change")  # the agent's options
    expect(item).not_to_contain_text("{#")  # no template comment printed
    shot(inbox, "hosted-acp-permission")
    item.locator("input[data-decision=approve]").check()
    item.get_by_role("button", name="Send decision").click()
    expect(inbox.locator(".resolved-text").first).to_contain_text(re.compile("Approved by"))

    page.bring_to_front()
    expect(timeline).to_contain_text("successfully updated the configuration", timeout=20_000)
    expect(page.locator("#task-head .chip")).to_have_text("Working")
    shot(page, "hosted-acp-done")
