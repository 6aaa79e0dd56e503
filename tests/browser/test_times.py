"""Issue 15, feature 3: time that reads right. Every time shows the reader's clock with
the date when it is not today and its age beside it ("14:02 · 3 min ago"); hovering gives
the exact moment with the zone named and UTC; every page's footer names the zone."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from a2a.models import Task
from tests.browser.conftest import SIZES, live
from tests.runtime.conftest import wait_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]

ZONE = "Asia/Tokyo"
CLOCK = r"\d{2}:\d{2}"


@pytest.mark.parametrize("size", SIZES)
def test_task_page_and_board_times_read_right(open_as, operator, start, size):
    task = start("ci-wait", "Run the suite for PR 77", build=77)
    wait_state(task.id, "paused-by-agent", timeout=60)
    two_days_ago = timezone.now() - timedelta(days=2, minutes=5)
    Task.objects.filter(pk=task.id).update(created_at=two_days_ago)
    page = open_as(operator, f"/tasks/{task.id}", zone=ZONE, viewport=size)
    live(page)
    expect(page.locator("#zone-note")).to_have_text(
        f"Times are in {ZONE}, this browser's zone; hover one for the exact moment and UTC."
    )
    created = page.locator("dt:text-is('Created') + dd")
    tokyo = two_days_ago.astimezone(timezone.get_fixed_timezone(9 * 60))
    expect(created.locator("time")).to_have_text(tokyo.strftime("%Y-%m-%d %H:%M"))
    expect(created.locator(".age")).to_have_text(" · 2 days ago")
    title = created.locator("time").get_attribute("title")
    assert ZONE in title and re.search(rf"{two_days_ago:%H:%M:%S} UTC$", title), title
    updated = page.locator("dt:text-is('Updated') + dd")
    expect(updated.locator("time")).to_have_text(re.compile(rf"^{CLOCK}$"))  # today: no date
    expect(updated.locator(".age")).to_have_text(re.compile(r"^ · (just now|\d+ min ago)$"))
    # where a live counter follows a time, no second age is added
    banner = page.locator(".banner").first
    expect(banner.locator("[data-ago]")).to_have_text(re.compile(r"ago$"))
    expect(banner.locator(".age")).to_have_count(0)

    page.goto("/")
    live(page)
    cell = page.locator(f'[data-task="{task.id}"] .col-time')
    expect(cell.locator("time")).to_have_text(re.compile(rf"^{CLOCK}$"))
    expect(cell.locator(".age")).to_have_text(re.compile(r"^(just now|\d+ min ago)$"))
    assert ZONE in cell.locator("time").get_attribute("title")


def test_in_a_table_the_age_goes_under_the_time(open_as, operator):
    from dashboard.models import AuditEntry

    AuditEntry.objects.create(
        who="operator:ana", action="cancel", task_id="t-1", reason="late night", outcome="ok",
        at=timezone.now() - timedelta(days=40),
    )  # fmt: skip
    page = open_as(operator, "/audit", zone=ZONE)
    cell = page.locator("table.audit tbody tr").first.locator("td").first
    expect(cell.locator(".age")).to_have_text("1 month ago")  # no lone "·" to wrap
    box = cell.locator(".age").bounding_box()
    clock = cell.locator("time").bounding_box()
    assert box and clock and box["y"] >= clock["y"] + clock["height"] - 1, (box, clock)
