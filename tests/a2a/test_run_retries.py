"""A run that meets an infrastructure fault is handed back for a retry, never failed; a
task has one pending job whatever wakes it. In-process against the test database (no
worker runs here: tests/runtime has the process-level fault tests)."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.runtime import executor, scheduler
from a2a.runtime.models import RunLease
from a2a.runtime.wakeups import enqueue
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


def jobs(task, status=None) -> list[DBTaskResult]:
    rows = DBTaskResult.objects.filter(status=status) if status else DBTaskResult.objects.all()
    return [row for row in rows if row.args_kwargs["args"] == [task.id]]


def test_an_infrastructure_fault_is_retried_with_backoff_and_shown_not_failed(transactional_db):
    """What a worker does when its database call failed: the run is handed back — lease
    freed, one deferred job, a `retrying` entry — and never failed. Driven in-process (no
    worker holds the task) so each effect can be read."""
    task = services.create_task(
        services.IncomingMessage(message_id="m1", parts=[{"kind": "text", "text": "go"}]),
        actor=CLIENT,
        skill="batch",
    )
    RunLease.objects.filter(task=task).update(owner=executor.leases.WORKER_ID)
    first = executor.retry_later(task.id, OperationalError("server closed the connection"))
    second = executor.retry_later(task.id, OperationalError("server closed the connection"))
    assert "retrying in" in first and "retrying in" in second, (first, second)
    task.refresh_from_db()
    assert task.state == "submitted"
    retries = list(task.events.filter(kind="retrying").order_by("id"))
    assert [e.data["attempt"] for e in retries] == [1, 2]
    assert retries[0].reason == "OperationalError: server closed the connection"
    lease = RunLease.objects.get(task=task)
    assert (lease.owner, lease.faults) == ("", 2)
    waiting = jobs(task, TaskResultStatus.READY)
    assert len(waiting) == 1  # the creation's job, brought to the retry's time at most
    # a wakeup brings a deferred retry forward instead of queueing a second job
    DBTaskResult.objects.filter(pk=waiting[0].pk).update(
        run_after=timezone.now() + timezone.timedelta(minutes=5)
    )
    assert enqueue(task.id) is False
    assert DBTaskResult.objects.ready().filter(pk=waiting[0].pk).exists()
    assert len(jobs(task)) == 1


def test_a_task_has_one_pending_job_however_often_it_is_woken(transactional_db):
    task = services.create_task(
        services.IncomingMessage(message_id="m1", parts=[{"kind": "text", "text": "go"}]),
        actor=CLIENT,
        skill="batch",
    )
    for n in range(5):
        services.add_message(
            task.id,
            services.IncomingMessage(message_id=f"more-{n}", parts=[{"kind": "text", "text": "x"}]),
            actor=CLIENT,
        )
    assert len(jobs(task)) == 1
    # a lost-looking lease: wanted, idle, queued long ago; the scheduler looks 50 times
    RunLease.objects.filter(task=task).update(
        enqueued_at=timezone.now() - timezone.timedelta(hours=1)
    )
    health = scheduler.Health()
    for _ in range(50):
        scheduler.tick(health)
    assert len(jobs(task)) == 1
