"""A third-party ACP agent hosted as a skill, end to end in the browser: the example agent
of @agentclientprotocol/sdk@1.9.0 (npm), started from the demo launcher, paused and
resumed from its task page, its permission request answered from the inbox; and a session
between turns (the RFC agent), idle rather than "Working", taking its next message from
the task page, at desktop and phone width."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from a2a.event_kinds import EventKind
from a2a.models import TaskEvent
from tests.browser.conftest import SIZES, live, shot
from tests.browser.test_accessibility import AXE, violations
from tests.runtime.conftest import wait_for, wait_state


def test_example_agent_launched_paused_resumed_and_its_permission_answered(open_as, operator):
    page = open_as(operator, "/demo")
    launcher = page.locator('[data-start="acp-example"]')
    expect(launcher).to_be_visible()
    page.locator("#prompt-acp-example").fill("Hello, agent")
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
    # its turn is over: the session waits for the next message, and the page says so
    expect(page.locator("#task-head .chip")).to_have_text("Working · idle", timeout=20_000)
    shot(page, "hosted-acp-done")


@pytest.mark.parametrize("size", SIZES)
def test_an_idle_session_says_so_and_takes_its_next_message(open_as, operator, size):
    page = open_as(operator, "/demo", viewport=size)
    page.context.add_init_script(path=str(AXE))  # into every document from now on
    page.reload()
    card = page.locator('.demo-card[data-skill="rfc-agent"]')
    expect(card).to_contain_text("Hosted ACP agent “RFC agent”")
    page.locator('.demo-card[data-skill="approval"]').scroll_into_view_if_needed()
    shot(page, f"demo-prompts-{size[0]}")
    assert violations(page) == []
    card.get_by_label("First message").fill("echo hello from the launcher")
    card.locator('[data-start="rfc-agent"]').click()
    live(page)
    task_id = page.locator("#task-live").get_attribute("data-task")
    timeline = page.locator("#task-timeline")
    expect(timeline).to_contain_text("hello from the launcher", timeout=20_000)
    banner = page.locator("#idle-banner")
    expect(banner).to_contain_text("Idle — waiting for your next message", timeout=20_000)
    expect(page.locator("#task-head .chip")).to_have_text("Working · idle")
    box = page.get_by_label("Your next message")
    expect(box).to_be_visible()
    shot(page, f"hosted-idle-{size[0]}")
    assert violations(page) == []

    board = page.context.new_page()
    board.goto("/")
    live(board)
    row = board.locator(f'#board-rows .row[data-task="{task_id}"]')
    expect(row).to_contain_text("idle — waiting for your next message")
    row.scroll_into_view_if_needed()
    shot(board, f"hosted-idle-board-{size[0]}")
    board.close()

    box.fill("echo the next message")
    page.locator('[data-action="message"]').click()
    expect(timeline).to_contain_text("the next message", timeout=20_000)
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task_id, kind=EventKind.TURN_ENDED).count() == 2,
        20, "the second turn to end",
    )  # fmt: skip
    expect(page.locator("#idle-banner")).to_be_visible()
    expect(page.get_by_label("Your next message")).to_have_value("")
