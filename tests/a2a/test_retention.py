"""Retention of the core's tables that grow with every call (docs/production.md,
"Retention"): finished job rows and message receipts go after their settings' time, in
bounded batches the scheduler repeats while a backlog lasts, along indexes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import periodic, services
from a2a.models import MessageReceipt
from a2a.runtime import scheduler
from a2a.services import receipts
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


def jobs(n: int, *, status: str, finished_hours_ago: float | None) -> list[uuid.UUID]:
    """n job rows as a worker leaves them."""
    now = timezone.now()
    at = None if finished_hours_ago is None else now - timedelta(hours=finished_hours_ago)
    rows = [
        DBTaskResult(
            status=status,
            args_kwargs={"args": [], "kwargs": {}},
            task_path="a2a.runtime.jobs.run_task",
            backend_name="default",
            run_after=now,
            finished_at=at,
        )
        for _ in range(n)
    ]
    DBTaskResult.objects.bulk_create(rows)
    return [r.pk for r in rows]


def test_finished_job_rows_older_than_the_retention_go_in_bounded_batches():
    old = jobs(7, status=TaskResultStatus.SUCCESSFUL, finished_hours_ago=25)
    failed = jobs(2, status=TaskResultStatus.FAILED, finished_hours_ago=30)
    young = jobs(3, status=TaskResultStatus.SUCCESSFUL, finished_hours_ago=23)
    running = jobs(2, status=TaskResultStatus.RUNNING, finished_hours_ago=None)

    assert scheduler.prune(24, limit=4) == 4
    # oldest first: the failed ones (30 h) went in the first batch
    assert not DBTaskResult.objects.filter(pk__in=failed).exists()
    assert scheduler.prune(24, limit=4) == 4
    assert scheduler.prune(24, limit=4) == 1
    assert scheduler.prune(24, limit=4) == 0
    left = set(DBTaskResult.objects.values_list("pk", flat=True))
    assert left == set(young) | set(running)
    assert not left & set(old)


def test_a_backlog_is_pruned_again_at_the_next_tick(monkeypatch):
    jobs(5, status=TaskResultStatus.SUCCESSFUL, finished_hours_ago=48)
    monkeypatch.setattr(scheduler, "PRUNE_BATCH", 2)
    health = scheduler.Health()
    scheduler.tick(health)  # a full batch: the next tick prunes again
    assert DBTaskResult.objects.count() == 3
    scheduler.tick(health)
    assert DBTaskResult.objects.count() == 1
    scheduler.tick(health)  # the last one, then once a minute again
    scheduler.tick(health)
    assert DBTaskResult.objects.count() == 0
    assert health.pruned_at > 0


def test_the_job_retention_reads_an_index():
    """At a million rows a scan of the job table is seconds; the index on finished_at
    (migration runtime 0003) keeps the prune's read a range scan."""
    names = connection.introspection.get_constraints(
        connection.cursor(), DBTaskResult._meta.db_table
    )
    assert names["taskdeck_jobs_finished_at"]["columns"] == ["finished_at"]
    cutoff = timezone.now()
    read = (
        DBTaskResult.objects.finished()
        .filter(finished_at__lt=cutoff)
        .order_by("finished_at")
        .values("id")[:5000]
    )
    with transaction.atomic():
        if connection.vendor == "postgresql":  # an empty table: make the planner show it
            connection.cursor().execute("SET LOCAL enable_seqscan = off")
        plan = read.explain()
    assert "taskdeck_jobs_finished_at" in plan


def send(message_id: str) -> None:
    message = services.IncomingMessage(
        message_id=message_id, parts=[{"kind": "text", "text": "hello"}]
    )
    services.receive_message(message, actor=CLIENT)


def test_receipts_older_than_the_window_go_in_bounded_batches_from_the_scheduler(monkeypatch):
    assert receipts.prune_now_and_then in periodic.jobs()
    for n in range(5):
        send(f"old-{n}")
    send("young")
    MessageReceipt.objects.exclude(message_id="young").update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    monkeypatch.setattr(receipts, "PRUNE_BATCH", 2)
    monkeypatch.setattr(receipts.PACE, "last", float("-inf"))
    scheduler.tick()
    assert MessageReceipt.objects.count() == 4  # a full batch: again at the next tick
    scheduler.tick()
    scheduler.tick()
    assert list(MessageReceipt.objects.values_list("message_id", flat=True)) == ["young"]
    scheduler.tick()  # within the minute now: nothing more is read
    assert receipts.PACE.last > float("-inf")


def test_a_send_retried_after_its_receipt_was_pruned_is_new_work():
    send("m-1")
    first = MessageReceipt.objects.get().task_id
    MessageReceipt.objects.update(created_at=timezone.now() - timedelta(hours=25))
    assert receipts.prune() == 1
    send("m-1")
    assert MessageReceipt.objects.get().task_id != first
