"""The projection's cost does not grow with the view: a one-task change emits the same
delta with 10 or 2,000 other tasks, the snapshot takes a constant number of queries, and
the opening window a socket sends stays within its byte budget."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from a2a import services
from a2a.lifecycle import State
from a2a.models import Task
from a2a.services import counts
from agui import selectors
from agui.models import AguiEvent, ViewTask
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db


def add_tasks(n: int) -> None:
    """Bulk rows (test setup): n tasks with their view entries."""
    now = timezone.now()
    tasks = [
        Task(
            id=f"bulk-{i:05d}",
            context_id="bulk",
            skill="batch",
            state="working",
            status_timestamp=now,
            created_at=now,
            updated_at=now,
        )
        for i in range(n)
    ]
    Task.objects.bulk_create(tasks)
    ViewTask.objects.bulk_create(
        ViewTask(
            task=t,
            entry={"taskId": t.id, "status": "working", "version": 1},
            status="working",
            version=1,
            updated_at=now,
        )
        for t in tasks
    )
    counts.recount()  # rows written around the services are counted again (a2a, D27)


def pause_delta(make_task) -> str:
    task = make_task("working")
    cursor = selectors.cursor()
    services.pause_task(task.id, actor=CLIENT, reason="hold")
    (delta,) = AguiEvent.objects.filter(id__gt=cursor, type="STATE_DELTA")
    # the task id and the times differ per run; the shape and size must not
    return json.dumps(delta.event).replace(task.id, "T")


def test_delta_size_does_not_depend_on_the_number_of_tasks(make_task):
    add_tasks(10)
    small = pause_delta(make_task)
    Task.objects.filter(context_id="bulk").delete()
    add_tasks(2000)
    large = pause_delta(make_task)
    assert len(small) == len(large)


def test_snapshot_queries_are_constant(make_task):
    waiting = make_task("input-required")
    add_tasks(10)
    with CaptureQueriesContext(connection) as few:
        small = selectors.snapshot()
    Task.objects.filter(context_id="bulk").delete()
    add_tasks(2000)
    with CaptureQueriesContext(connection) as many:
        large = selectors.snapshot()
    assert len(few.captured_queries) == len(many.captured_queries) == 2
    assert len(large["view"]["tasks"]) == len(small["view"]["tasks"]) + 1990
    assert len(large["view"]["pendingInterrupts"]) == 1
    (pending,) = large["view"]["pendingInterrupts"].values()
    waiting.refresh_from_db()
    assert pending["taskId"] == waiting.id
    assert pending["title"] and pending["title"] == waiting.input_request["title"]


def test_the_opening_window_stays_within_its_budget_in_constant_queries(make_task):
    """What a socket sends first: with 10 tasks the whole view, with 2,000 the part that
    fits the budget (the tasks waiting on someone first), marked cut, in two more queries.
    The view is read one state at a time, in the window's order (agui.selectors
    ._newest_first), each row with its pending requests: one read per state, whatever the
    count of tasks or of requests."""
    waiting = make_task("input-required")
    add_tasks(10)
    reads = len(State)
    with CaptureQueriesContext(connection) as few:
        small = selectors.window(max_bytes=64 * 1024)
    assert len(few.captured_queries) == reads
    assert not small.truncated and small.snapshot == selectors.snapshot()
    Task.objects.filter(context_id="bulk").delete()
    add_tasks(2000)
    with CaptureQueriesContext(connection) as many:
        large = selectors.window(max_bytes=64 * 1024)
    # cut: the note's total, from the open tasks' kept counts and the finished in the view;
    # the states of ranks after the cut are not read at all
    assert len(many.captured_queries) <= reads + 2
    assert len(json.dumps(large.snapshot, separators=(",", ":"))) <= 64 * 1024
    shown = len(large.snapshot["view"]["tasks"])
    assert large.snapshot["truncated"] == {"shown": shown, "total": 2001, "maxBytes": 64 * 1024}
    assert waiting.id in large.snapshot["view"]["tasks"]  # waits on an operator: first
    assert set(large.versions) == set(large.snapshot["view"]["tasks"])
    (pending,) = large.snapshot["view"]["pendingInterrupts"].values()
    assert pending["taskId"] == waiting.id


@pytest.mark.postgres
def test_pending_requests_are_planned_with_kind_and_pending_together():
    """The board's and the inbox's read of pending input requests: with PostgreSQL's
    statistics on (kind, pending) taken together (migration agui 0006), a fleet of parked
    tasks (pending pauses) no longer makes the planner expect every pending row to be a
    request and skip `interrupt_kind_pending`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT stxkeys::text FROM pg_statistic_ext WHERE stxname = %s",
            ["interrupt_kind_pending_stats"],
        )
        assert cursor.fetchone() is not None
