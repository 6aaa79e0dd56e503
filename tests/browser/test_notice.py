"""Issue 15, feature 4: notice what waits. The tab's title and icon carry the number of
pending approvals on every page; an operator who turns notifications on (inbox page) gets
one for each new approval request and each failed task, and a click on it opens that
request or task. Chromium's own notifications cannot be seen headless, so the page's
Notification is replaced by a recorder (what the page asked the browser to show)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from a2a import services
from tests.browser.conftest import SIZES
from tests.conftest import AGENT
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

RECORDER = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  class Recorded {
    constructor(title, options = {}) {
      this.title = title; this.body = options.body; this.tag = options.tag;
      window.__notes.push(this);
      document.documentElement.dataset.notes = String(window.__notes.length);
    }
    close() {}
    static get permission() { return Real.permission; }
    static requestPermission() { return Real.requestPermission(); }
  }
  window.Notification = Recorded;
})();
"""


def notes(page) -> list[dict]:
    return page.evaluate("window.__notes.map(n => ({title: n.title, body: n.body, tag: n.tag}))")


@pytest.mark.parametrize("size", SIZES)
def test_the_tab_counts_pending_approvals_on_every_page(open_as, operator, start, size):
    page = open_as(operator, "/", viewport=size)
    expect(page).to_have_title("Board · Taskdeck")
    asking = start("approval", "Roll out 2.19")
    wait_state(asking.id, "input-required", timeout=60)
    expect(page).to_have_title("(1) Board · Taskdeck")
    expect(page.locator('link[rel="icon"]')).to_have_attribute("href", "/favicon-1.svg")
    page.goto("/audit")
    expect(page).to_have_title(re.compile(r"^\(1\) Audit"))
    services.cancel_task(asking.id, actor=AGENT, reason="done with it")
    expect(page).to_have_title(re.compile(r"^Audit"))
    expect(page.locator('link[rel="icon"]')).to_have_attribute("href", "/favicon-0.svg")


def test_notifications_only_when_turned_on_and_each_opens_its_item(open_as, operator, start, site):
    page = open_as(operator, "/inbox")
    page.context.grant_permissions(["notifications"], origin=site)
    page.context.add_init_script(RECORDER)
    page.reload()
    first = start("approval", "Roll out 2.20")
    wait_state(first.id, "input-required", timeout=60)
    expect(page).to_have_title(re.compile(r"^\(1\) "))
    assert notes(page) == []  # not turned on: nothing shown

    page.get_by_label(re.compile("Browser notifications")).check()
    expect(page.locator("#notify-note")).to_contain_text("You will be notified")
    second = start("approval", "Roll out 2.21")
    wait_state(second.id, "input-required", timeout=60)
    expect(page).to_have_title(re.compile(r"^\(2\) "))
    expect(page.locator("html")).to_have_attribute("data-notes", "1")
    [note] = notes(page)
    assert note["title"] == "Approval needed: Approve the plan" and note["body"] == "Roll out 2.21"

    crunching = start("batch", "Crunch the numbers", items=400, pace=2)
    wait_state(crunching.id, "working", timeout=60)
    services.fail_task(crunching.id, actor=AGENT, reason="the cluster is gone")
    expect(page.locator("html")).to_have_attribute("data-notes", "2")
    failed = notes(page)[1]
    assert failed["title"] == "Task failed: Crunch the numbers", failed
    assert failed["body"] == "the cluster is gone", failed

    page.evaluate("window.__notes[1].onclick()")  # a click opens the failed task
    expect(page).to_have_url(re.compile(rf"/tasks/{crunching.id}$"))
    page.goto("/inbox")
    expect(page.get_by_label(re.compile("Browser notifications"))).to_be_checked()  # kept
