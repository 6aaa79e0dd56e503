"""Crash safety: a worker killed with SIGKILL mid-run loses nothing and repeats nothing;
deadlines still fire after the scheduler restarts."""

from __future__ import annotations

import pytest

from a2a import services
from a2a.runtime.models import RunLease, StepRecord
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_for, wait_state
from tests.runtime.test_flows import make_due, results, started_items

pytestmark = pytest.mark.django_db(transaction=True)


def test_sigkill_mid_batch_another_worker_finishes_each_item_once(start, runtime):
    task = start("batch", items=40, pace=2)
    started_items(task, 5)
    owner = wait_for(
        lambda: (
            RunLease.objects.filter(task=task)
            .exclude(owner="")
            .values_list("owner", flat=True)
            .first()
        ),
        what="the worker running the batch",
    )
    victim = runtime.worker_with_pid(int(owner.rsplit(":", 1)[1]))
    runtime.kill(victim)  # SIGKILL: no cleanup, the lease is left behind
    replacement = runtime.start_worker()
    wait_state(task.id, "completed", timeout=60)
    assert results(task) == list(range(40))  # every item once, in order
    steps = list(StepRecord.objects.filter(task=task, name__startswith="item "))
    assert sorted(s.name for s in steps) == sorted(f"item {i}" for i in range(40))
    workers = {s.result["worker"] for s in steps}
    assert owner in workers and len(workers) >= 2, workers  # the run really moved
    assert replacement.poll() is None


def test_deadlines_fire_after_the_scheduler_restarts(start, runtime):
    task = start("scheduled")
    wait_state(task.id, "paused-by-agent")
    runtime.kill(runtime.scheduler)
    make_due(task)  # the deadline passes while no scheduler runs
    runtime.start_scheduler()  # returns once it ticks: its start-up is not the wait's
    wait_for(lambda: task.suspensions.filter(cause="timeout").exists(), 30, "the deadline to fire")
    wait_state(task.id, "completed")


def test_a_pause_survives_every_process_restarting(start, runtime):
    task = start("batch", items=20, pace=2)
    started_items(task, 2)
    services.pause_task(task.id, actor=CLIENT, reason="maintenance")
    runtime.stop_all()
    runtime.start_worker()
    runtime.start_worker()
    runtime.start_scheduler()
    assert task.events.filter(kind="resumed").count() == 0
    services.resume_task(task.id, actor=CLIENT)
    wait_state(task.id, "completed")
    assert results(task) == list(range(20))
