"""What an operator does in a real browser, against Daphne, real workers and the scheduler:
sign in, follow interrupts arriving live, answer them, pause and resume, act in bulk; and
what a viewer cannot do."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from a2a import services
from a2a.models import Suspension, Task
from dashboard.models import AuditEntry
from tests.browser.conftest import CLOCK, live, shot
from tests.runtime.conftest import state, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def row(page, task_id: str):
    return page.locator(f'#board-rows [data-task="{task_id}"]')


def test_sign_in(browser, site, operator, settle):
    context = browser.new_context(base_url=site)
    page = context.new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")
    page.get_by_label("Password").fill("pw-ana")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Tasks")).to_be_visible()
    live(page)
    expect(page.locator(".who")).to_contain_text("ana")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    context.close()


def test_approval_demo_interrupt_arrives_live_bad_answer_refused_then_approved(open_as, operator):
    inbox = open_as(operator, "/inbox")
    live(inbox)
    expect(inbox.locator("#pending-empty")).to_be_visible()
    inbox.evaluate("window.__sameDocument = true")
    launcher = inbox.context.new_page()
    launcher.goto("/demo")
    launcher.locator('[data-start="approval"]').click()
    expect(launcher.locator(".task-title")).to_have_text("Roll out release 2.14 to production")
    task_id = launcher.locator("#task-live").get_attribute("data-task")

    item = inbox.locator(f'.inbox-item[data-task="{task_id}"]')
    expect(item).to_be_visible(timeout=20_000)  # arrived over the WebSocket
    assert inbox.evaluate("window.__sameDocument") is True  # no reload
    expect(item).to_contain_text("The plan is ready")
    expect(inbox.locator("#inbox-count")).to_have_text("1")
    shot(inbox, "inbox")

    inbox.keyboard.press("j")
    inbox.keyboard.press("r")  # reject: selects it and moves to the comment
    expect(item.locator("[data-comment]")).to_be_focused()
    inbox.keyboard.press("Escape")
    item.get_by_role("button", name="Send decision").click()
    error = inbox.locator(".inbox-item .field-error").first
    expect(error).to_have_text("Say why you reject it: a comment is required.")
    assert state(task_id) == "input-required"
    expect(inbox.locator(f'.inbox-item[data-task="{task_id}"]')).to_be_visible()

    inbox.locator(f'.inbox-item[data-task="{task_id}"]').locator("[data-comment]").fill("ship it")
    inbox.locator("body").click(position={"x": 5, "y": 300})
    inbox.keyboard.press("a")  # approve and send
    expect(inbox.locator(".resolved-text").first).to_contain_text(
        # the clock in the reader's zone, then its age (issue 15: time that reads right)
        re.compile("Approved by operator:ana at \\d\\d:\\d\\d · just now: \u2018ship it\u2019")
    )
    wait_state(task_id, "completed")
    entries = AuditEntry.objects.filter(task_id=task_id).order_by("id")
    outcomes = list(entries.values_list("action", "outcome"))
    assert outcomes == [("start", "ok"), ("answer", "refused"), ("answer", "ok")]


def test_guided_interrupt_flow(open_as, operator):
    page = open_as(operator, "/demo")
    page.get_by_role("button", name="Start the interrupt flow").click()
    live(page)
    form = page.locator("#guided-item .inbox-item")
    expect(form).to_be_visible(timeout=20_000)
    expect(page.locator('#guided-steps li[data-step="interrupt"]')).to_have_class(re.compile("now"))
    form.locator("input[data-decision=approve]").check()
    form.locator("[data-comment]").fill("go ahead")
    form.get_by_role("button", name="Send decision").click()
    expect(page.locator("#guided-outcome")).to_have_text(
        "Plan carried out. Approver said: go ahead", timeout=20_000
    )
    expect(page.locator("#guided-item .inbox-item")).to_have_count(0)


def test_pause_a_running_batch_see_the_banner_resume_and_watch_it_finish(open_as, operator, start):
    # 80 items x 0.5 s x pace 4 x the delay scale 0.05 = 8 s: time to open the page and pause
    task = start("batch", "Re-render 80 thumbnails", items=80, pace=4)
    wait_state(task.id, "working")
    page = open_as(operator, f"/tasks/{task.id}")
    live(page)
    page.get_by_label("Reason for the pause").fill("release freeze")
    page.locator('[data-action="pause"]').click()
    banner = page.locator("#task-banner .banner")
    expect(banner).to_contain_text("Paused by operator:ana: release freeze")
    expect(banner).to_contain_text("No deadline")
    expect(page.locator("#task-head .chip")).to_have_text("Paused")
    assert state(task.id) == "paused-by-client"
    done_at_pause = page.locator(".progress-text").text_content()
    live(page)
    shot(page, "task-paused")

    page.locator('[data-action="resume"]').click()
    expect(page.locator("#task-head .chip")).to_have_text("Completed", timeout=60_000)
    expect(page.locator(".progress-text")).to_have_text("80 of 80")
    expect(page.locator("#task-banner .banner")).to_contain_text("Processed 80 items.")
    timeline = page.locator("#task-timeline")
    expect(timeline).to_contain_text("release freeze")
    expect(timeline).to_contain_text("resumed by hand")
    assert done_at_pause != "80 of 80"


def test_two_browsers_an_action_in_one_shows_in_the_other(open_as, operator, viewer, start):
    task = start("ci-wait", "Run the integration suite for PR 77", build=77)
    wait_state(task.id, "paused-by-agent")
    watcher = open_as(viewer, "/")
    actor = open_as(operator, f"/tasks/{task.id}")
    live(watcher)
    expect(row(watcher, task.id).locator(".line")).to_contain_text(
        re.compile(rf"parked: waiting for ci.build.completed:77 — times out {CLOCK}, then fails")
    )
    actor.get_by_label("Reason for the pause").fill("maintenance window")
    actor.locator('[data-action="pause"]').click()
    expect(row(watcher, task.id).locator(".line")).to_contain_text(
        re.compile(rf"paused by operator:ana: maintenance window — since {CLOCK}")
    )
    expect(row(watcher, task.id).locator(".chip")).to_have_text("Paused")
    actor.locator('[data-action="resume"]').click()
    expect(row(watcher, task.id).locator(".chip")).not_to_have_text("Paused")


def test_a_viewer_sees_no_action_and_a_forged_post_is_refused(open_as, viewer, start):
    task = start("ci-wait", "Run the integration suite for PR 78", build=78)
    wait_state(task.id, "paused-by-agent")
    page = open_as(viewer, f"/tasks/{task.id}")
    live(page)
    expect(page.locator("#task-actions")).to_contain_text("change nothing")
    expect(page.locator("[data-action]")).to_have_count(0)
    expect(page.locator(".role")).to_have_text("viewer")
    page.goto("/")
    expect(page.locator("#bulk-form")).to_have_count(0)
    expect(page.locator('#board-rows input[type="checkbox"]')).to_have_count(0)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"/tasks/{task.id}/cancel",
        form={"reason": "sneaky", "csrfmiddlewaretoken": token},
        headers={"Referer": page.url},
    )
    assert response.status == 403
    assert "Nothing was changed" in response.text()
    assert state(task.id) == "paused-by-agent"
    assert AuditEntry.objects.get(task_id=task.id).outcome == "refused"


def test_bulk_pause_of_a_filter(open_as, operator, start):
    jobs = [start("batch", f"nightly-export {i}", items=400, pace=4) for i in range(3)]
    other = start("ci-wait", "Run the integration suite for PR 79", build=79)
    page = open_as(operator, "/")
    live(page)
    page.get_by_label("Search").fill("nightly-export")
    expect(page).to_have_url(re.compile(r"\?q=nightly-export$"))
    expect(page.locator("#bulk-matching")).to_have_text("3")
    expect(page.locator("#board-rows .row:visible")).to_have_count(3)
    page.get_by_label("all 3 matching the filter").check()
    page.locator("#bulk-reason").fill("storage maintenance")
    page.get_by_role("button", name="Preview…").click()
    expect(page.locator("#bulk-preview-count")).to_contain_text("3 will be paused")
    page.locator("#bulk-confirm").click()
    # the action runs after the redirect; the page polls until it is done
    expect(page.locator("#bulk-summary")).to_have_text("3 paused, 0 refused, of 3.", timeout=30_000)
    states = set(Task.objects.filter(pk__in=[j.id for j in jobs]).values_list("state", flat=True))
    assert states == {"paused-by-client"}
    assert not Suspension.objects.filter(task=other, initiator="client").exists()
    page.get_by_role("link", name="Back to the board").click()
    expect(page).to_have_url(re.compile(r"\?q=nightly-export$"))
    expect(page.locator("#board-rows .row:visible .chip")).to_have_text(["Paused"] * 3)


def test_the_board_reconnects_and_resyncs_when_it_misses_a_change(open_as, operator, start):
    task = start("ci-wait", "Run the integration suite for PR 80", build=80)
    wait_state(task.id, "paused-by-agent")
    page = open_as(operator, "/")
    live(page)
    version = page.evaluate(f"window.taskdeck.live.tasks['{task.id}'].version")
    # a delta that skips versions (as if one was lost): the client asks for a snapshot
    page.evaluate(
        """([id, v]) => window.taskdeck.live.receive(JSON.stringify({type: "STATE_DELTA",
            delta: [{op: "replace", path: `/view/tasks/${id}/version`, value: v + 3}]}))""",
        [task.id, version],
    )
    page.wait_for_function(
        "([id, v]) => window.taskdeck.live.tasks[id].version === v", arg=[task.id, version]
    )
    assert page.evaluate("window.taskdeck.live.stats.resyncs") == 1
    # a dropped socket: the indicator says so, it reconnects by itself and catches up
    page.evaluate("window.taskdeck.live.ws.close()")
    page.wait_for_function("() => window.taskdeck.live.stats.statuses.includes('offline')")
    services.emit_event("ci.build.completed:80", {"status": "green"}, actor=services.SYSTEM)
    wait_state(task.id, "completed")
    live(page)
    expect(row(page, task.id).locator(".chip")).to_have_text("Completed")
    assert page.evaluate("window.taskdeck.live.stats.reconnects") >= 1


def test_the_board_counts_states_and_says_what_each_task_waits_for(open_as, operator, start):
    approval = start("approval", "Roll out release 2.15 to production")
    parked = start("ci-wait", "Run the integration suite for PR 81", build=81)
    scheduled = start("scheduled", "Post the daily digest", minutes=60)
    done = start("batch", "Re-render 2 thumbnails", items=2)
    broken = start("flaky", "Summarise the incident")  # fails after its first step
    held = start("budget", "Research three vendors for log storage", budget=100)
    # six agents share the two test workers; on a loaded machine that takes a while
    wait_state(approval.id, "input-required", timeout=120)
    wait_state(parked.id, "paused-by-agent", timeout=120)
    wait_state(scheduled.id, "paused-by-agent", timeout=120)
    wait_state(done.id, "completed", timeout=120)
    wait_state(broken.id, "failed", timeout=120)
    wait_state(held.id, "paused-by-client", timeout=120)
    # started last: a long batch keeps one worker busy for its whole run
    busy = start("batch", "Re-render 400 thumbnails", items=400, pace=4)
    wait_state(busy.id, "working", timeout=120)
    page = open_as(operator, "/")
    live(page)
    for s in ("input-required", "paused-by-agent", "completed", "failed", "paused-by-client"):
        expected = Task.objects.filter(state=s).count()
        expect(page.locator(f'[data-count="{s}"]')).to_have_text(str(expected))
    expect(page.locator('[data-count=""]')).to_have_text("7")
    lines = {t.id: row(page, t.id).locator(".line") for t in (approval, parked, held, broken)}
    expect(lines[approval.id]).to_contain_text("waiting for input: The plan is ready")
    expect(lines[parked.id]).to_contain_text(
        re.compile(rf"parked: waiting for ci.build.completed:81 — times out {CLOCK}, then fails")
    )
    expect(lines[held.id]).to_contain_text(
        re.compile(r"paused by agent:budget: token budget exceeded: spent \d+ of 100 — since")
    )
    expect(lines[broken.id]).to_contain_text("The agent's error: ValueError: the model returned")
    shot(page, "board")
    page.locator('.count[data-state="paused-by-agent"]').click()
    expect(page).to_have_url(re.compile(r"\?state=paused-by-agent$"))
    expect(page.locator("#board-rows .row:visible")).to_have_count(2)
    page.reload()  # the filter survives a reload: it lives in the URL
    expect(page.locator("#f-state")).to_have_value("paused-by-agent")
    expect(page.locator("#board-rows .row:visible")).to_have_count(2)
