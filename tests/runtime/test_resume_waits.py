"""A resumed task that no worker runs says so in the live view until a worker takes its
run (issue 15, bug 4): with every worker stopped it waits, and the first worker to start
takes it, notes the pickup once, and finishes the run."""

from __future__ import annotations

import pytest

from a2a import services
from a2a.formats import ts
from agui import selectors
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_for, wait_idle, wait_state
from tests.runtime.test_flows import results, started_items

pytestmark = pytest.mark.django_db(transaction=True)


def entry(task_id: str) -> dict:
    return selectors.snapshot([task_id])["view"]["tasks"][task_id]


def test_a_resumed_task_waits_for_a_worker_until_one_takes_it(start, runtime):
    task = start("batch", items=20, pace=2)
    started_items(task, 2)
    services.pause_task(task.id, actor=CLIENT, reason="maintenance")
    wait_idle(task.id)
    runtime.stop_all()
    try:
        services.resume_task(task.id, actor=CLIENT)
        resumed = task.events.filter(kind="resumed").get()
        shown = entry(task.id)
        assert shown["status"] == "working"
        assert shown["waitingForWorkerSince"] == ts(resumed.created_at)
        assert not task.events.filter(kind="picked_up").exists()
    finally:
        runtime.start_worker()
        runtime.start_worker()
        runtime.start_scheduler()
    wait_for(
        lambda: entry(task.id)["waitingForWorkerSince"] is None,
        what="a worker to take the resumed run",
    )
    picked = task.events.filter(kind="picked_up").get()
    assert picked.pk > resumed.pk and picked.to_state == "working"
    wait_state(task.id, "completed")
    assert results(task) == list(range(20))  # the run went on where it stopped
    assert task.events.filter(kind="picked_up").count() == 1  # once per resume
