"""Issue 29, items 1 and 3, in Chromium at 1440x900 and 390x844: a board whose live view
is cut to its byte budget by hundreds of agent parks still shows every approval, its
counts, the tab title and the Inbox badge are those of every task (equal to the inbox's),
it says what is outside the view and how to reach it; and a bulk cancel of every park
(far more than the board holds) is previewed with the true count, done in batches and
reported task by task.

The parks are written straight into the tables (a2a.selectors's counts recounted), like
the scale tests' fills: 500 through the services would take most of a minute here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from a2a.models import ProjectionDue, Task
from a2a.services import counts
from agui.models import ViewTask
from tests.browser.conftest import SIZES, board_tools, shot
from tests.runtime.conftest import wait_for, wait_state

pytestmark = pytest.mark.django_db(transaction=True)

PARKS = 500  # ~1.1 KB of entry each: 550 KB, past the 512 KB budget


@pytest.fixture
def parked_fleet() -> Iterator[list[str]]:
    """PARKS tasks parked by their agent, all newer than anything the test started before
    (so newest-first alone would push older approvals out), then gone again."""
    now = timezone.now() + timedelta(seconds=5)
    tasks = [
        Task(
            id=f"fleet-{i:04d}",
            context_id="fleet",
            skill="ci-wait",
            owner="user:ana",
            state="paused-by-agent",
            status_timestamp=now,
            created_at=now,
            updated_at=now + timedelta(milliseconds=i),
        )
        for i in range(PARKS)
    ]
    Task.objects.bulk_create(tasks)
    ViewTask.objects.bulk_create(
        ViewTask(
            task=t,
            entry={
                "taskId": t.id,
                "contextId": "fleet",
                "skill": "ci-wait",
                "title": f"Nightly fleet check {t.id}",
                "status": "paused-by-agent",
                "statusText": "Waiting for CI build to finish. " * 30,
                "updatedAt": t.updated_at.isoformat().replace("+00:00", "Z"),
                "createdAt": t.created_at.isoformat().replace("+00:00", "Z"),
                "version": 1,
                "taskVersion": 1,
                "summaries": {"progress": None, "artifacts": 0},
                "pause": None,
                "origin": None,
            },
            status="paused-by-agent",
            version=1,
            updated_at=t.updated_at,
        )
        for t in tasks
    )
    counts.recount()
    yield [t.id for t in tasks]
    # The site's projector may still be writing the view rows of a bulk action's changes
    # (it runs after each batch's commit): deleting under it deadlocks on those rows.
    wait_for(
        lambda: not ProjectionDue.objects.filter(task__context_id="fleet").exists(),
        60,
        "the projection of the fleet's changes",
    )
    Task.objects.filter(context_id="fleet").delete()  # before the teardown's cancels
    counts.recount()


def live_cut(page) -> None:
    """`live`, with room for a snapshot of the whole 512 KB budget on a busy machine."""
    expect(page.locator("#conn")).to_have_attribute("data-status", "live", timeout=30_000)


def approvals(start, n: int) -> list[Task]:
    tasks = [start("approval", f"Ship release 2.{i} to production") for i in range(n)]
    for t in tasks:
        wait_state(t.id, "input-required")
    return tasks


def with_axe(page) -> bool:
    """axe in every document of the page's context from now on (the CSP refuses an
    injected script), where it is installed and in the SQLite lane, as in
    test_accessibility; the page is loaded again."""
    from tests.browser import test_accessibility as a11y

    if connection.vendor != "sqlite" or not a11y.AXE.exists():
        return False
    page.context.add_init_script(path=str(a11y.AXE))
    page.reload()
    return True


def axe_clean(page, installed: bool) -> None:
    """0 axe violations on the page as it is now."""
    from tests.browser import test_accessibility as a11y

    if installed:
        assert a11y.violations(page) == []


@pytest.mark.parametrize(
    ("size", "scheme"),
    [pytest.param((1440, 900), "light", id="desktop-light"),
     pytest.param((390, 844), "dark", id="phone-dark")],
)  # fmt: skip
def test_a_cut_board_keeps_every_approval_and_counts_every_task(
    open_as, operator, start, parked_fleet, size, scheme
):
    asking = approvals(start, 2)  # older than every park
    # pages of 20 rows: the approvals are on top of the first whatever their age
    page = open_as(operator, "/?size=20", viewport=size, scheme=scheme)
    axe = with_axe(page)
    live_cut(page)
    rows = page.locator("#board-rows .row")
    # every approval is on the board, however many newer parks there are
    for t in asking:
        expect(page.locator(f'#board-rows .row[data-task="{t.id}"]')).to_have_count(1)
    expect(page.locator('.count[data-state="input-required"] .count-n')).to_have_text("2")
    expect(page.locator('.count[data-state="paused-by-agent"] .count-n')).to_have_text("500")
    expect(page).to_have_title(re.compile(r"^\(2\) "))
    expect(page.locator("#inbox-count")).to_have_text("2")
    # what is outside the view, and the way to it
    note = page.locator("#board-truncated")
    expect(note).to_contain_text(re.compile(r"Not on this board: \d+ more parked by agents"))
    held = page.evaluate("Object.keys(window.taskdeck.live.tasks).length")
    assert held < PARKS + 2
    expect(note).to_contain_text(f"{PARKS + 2 - held} more parked by agents")
    name = f"fleet-board-{size[0]}-{scheme}"
    shot(page, name)
    axe_clean(page, axe)
    note.get_by_role("link", name="list them").click()
    expect(page).to_have_url(re.compile(r"\?state=paused-by-agent&size=20$"))
    expect(rows.first).to_have_attribute("data-task", re.compile(r"^fleet-"))
    expect(page.locator("#f-state")).to_have_value("paused-by-agent")
    # the inbox agrees
    page.goto("/inbox")
    expect(page.locator(".inbox-item, [id^=item-]").first).to_be_visible()
    expect(page).to_have_title(re.compile(r"^\(2\) "))


@pytest.mark.parametrize("size", SIZES)
def test_bulk_cancel_of_every_park_is_counted_done_in_batches_and_reported(
    open_as, operator, start, parked_fleet, size
):
    page = open_as(operator, "/?state=paused-by-agent&size=20", viewport=size)
    axe = with_axe(page)
    live_cut(page)
    board_tools(page)  # a phone folds the filters and the bulk bar
    expect(page.locator("#bulk-matching-note")).to_be_visible()
    page.locator("#bulk-scope-filter").check()
    page.locator("#bulk-action").select_option("cancel")
    page.locator("#bulk-reason").fill("fleet decommissioned")
    page.get_by_role("button", name="Preview…").click()
    expect(page.locator("h1")).to_have_text(f"Cancel {PARKS} tasks?")
    expect(page.locator("#bulk-preview-count")).to_contain_text(f"{PARKS} will be canceled")
    shot(page, f"fleet-bulk-preview-{size[0]}")
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-summary")).to_have_text(
        f"{PARKS} canceled, 0 refused, of {PARKS}.", timeout=60_000
    )
    expect(page.locator("#bulk-state")).to_have_text("done")
    shot(page, f"fleet-bulk-done-{size[0]}")
    axe_clean(page, axe)
    assert Task.objects.filter(context_id="fleet", state="canceled").count() == PARKS
    page.get_by_role("link", name="Back to the board").click()
    expect(page).to_have_url(re.compile(r"\?state=paused-by-agent"))
