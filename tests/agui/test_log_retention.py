"""The AG-UI log's retention (agui/retention.py, docs/agui.md "How long the log is kept"):
the rows of tasks that finished long ago and left the view go, in bounded steps; what
a live view entry or an open run reads stays; and a socket whose process had not read the
rows deleted gets a fresh snapshot instead of a silent gap.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from a2a import conf, periodic
from a2a.models import Task
from a2a.runtime import scheduler
from agui import projection, projector, retention, selectors
from agui.models import AguiEvent, AguiRun, AguiThread, LogRetention, ViewTask
from tests.agui.test_view_bound import view_settings
from tests.agui.test_websocket import Client

pytestmark = pytest.mark.django_db(transaction=True)

HOURS = conf.View.event_retention_hours.default  # 24


def rows_of(task: Task) -> int:
    return AguiEvent.objects.filter(task=task).count()


def finished_at(task: Task, when: datetime) -> None:
    """Date the task's view row back: it finished `when` (what the retention reads)."""
    ViewTask.objects.filter(task=task).update(updated_at=when)


def evict_all(now: datetime) -> None:
    while projector.evict_finished(now):
        pass


def test_the_rows_of_a_task_finished_and_gone_from_the_view_go_after_the_retention(make_task):
    now = timezone.now()
    old, young = make_task("completed"), make_task("failed")
    finished_at(old, now - timedelta(hours=HOURS + 1))
    finished_at(young, now - timedelta(hours=HOURS - 1))
    evict_all(now)
    assert rows_of(old) and rows_of(young)
    gone = rows_of(old)

    assert retention.prune(now).rows == gone
    assert rows_of(old) == 0
    assert rows_of(young) > 0  # younger than the retention
    assert ViewTask.objects.filter(task=old).exists()  # the board and timeline keep theirs
    assert retention.prune(now).rows == 0


def test_open_tasks_tasks_in_the_view_and_streamed_tasks_keep_their_rows(make_task):
    later = timezone.now() + timedelta(hours=HOURS + 1)
    parked = make_task("paused-by-agent")  # open a long time
    shown = make_task("completed")  # finished long ago, still in the view
    streamed = make_task("completed")  # an AG-UI run still streams it
    thread = AguiThread.objects.create(thread_id="t-1", context_id="c", created_by="x")
    AguiRun.objects.create(run_id="r-1", thread=thread, task=streamed)  # outcome "": open
    before = {t.id: rows_of(t) for t in (parked, shown, streamed)}
    with view_settings(FINISHED_MINUTES=10 * 60 * HOURS):  # finished ones stay in the view
        evict_all(later)
        assert retention.prune(later).rows == 0
    assert {t.id: rows_of(t) for t in (parked, shown, streamed)} == before

    evict_all(later)  # both finished ones leave the view
    assert retention.prune(later).rows == before[shown.id] + 1  # its EVICTION too
    assert rows_of(shown) == 0
    assert rows_of(streamed) == before[streamed.id] + 1  # and its EVICTION
    assert rows_of(parked) == before[parked.id]


def test_a_backlog_drains_in_bounded_steps_and_each_task_is_scanned_once(make_task):
    now = timezone.now()
    tasks = [make_task("completed") for _ in range(4)]
    later = now + timedelta(hours=HOURS + 1)
    assert retention.prune(later, rows=3, tasks=2) == retention.Pruned(0, more=False)  # in view
    evict_all(later)
    total = AguiEvent.objects.filter(task__in=tasks).count()

    steps = []
    while (step := retention.prune(later, rows=3, tasks=2)).more:
        assert step.rows <= 3
        steps.append(step.rows)
    steps.append(step.rows)
    assert sum(steps) == total and len(steps) > total // 3
    assert not AguiEvent.objects.filter(task__in=tasks).exists()
    last = max(tasks, key=lambda t: (ViewTask.objects.get(task=t).updated_at, t.id))
    assert LogRetention.objects.get().through_task == last.id  # the position moved past all


def test_the_scheduler_runs_it_through_the_periodic_registry(make_task, settings, monkeypatch):
    assert retention.prune_now_and_then in periodic.jobs()
    monkeypatch.setattr(retention.PACE, "last", float("-inf"))  # a minute since the last
    task = make_task("completed")
    evict_all(timezone.now() + timedelta(hours=2))
    settings.TASKDECK = {**settings.TASKDECK, "VIEW": {"EVENT_RETENTION_HOURS": 0}}
    scheduler.tick()
    assert rows_of(task) == 0


def test_the_setting_is_bounded():
    from django.core.exceptions import ImproperlyConfigured

    assert conf.read({}).taskdeck["VIEW"]["EVENT_RETENTION_HOURS"] == 24
    with pytest.raises(ImproperlyConfigured, match="TASKDECK_AGUI_EVENT_RETENTION_HOURS"):
        conf.read({"TASKDECK_AGUI_EVENT_RETENTION_HOURS": "-1"})
    with pytest.raises(ImproperlyConfigured, match="TASKDECK_AGUI_EVENT_RETENTION_HOURS"):
        conf.read({"TASKDECK_AGUI_EVENT_RETENTION_HOURS": "a day"})


@pytest.fixture
def ws_url(asgi_server) -> str:
    return asgi_server.replace("http://", "ws://") + "/ws/agui/"


def test_a_socket_whose_server_had_not_read_the_deleted_rows_gets_a_fresh_snapshot(
    ws_url, api_key, make_task
):
    """The server's Tailer sits at the log's end. Rows written and deleted in one
    transaction are rows it never read: its cursor is then before what is retained, and
    the socket must start again from a snapshot, not go on as if nothing happened."""
    kept = make_task("working")
    client = Client(ws_url, api_key)
    try:
        assert client.recv()["type"] == "STATE_SNAPSHOT"
        later = timezone.now() + timedelta(hours=HOURS + 1)
        with transaction.atomic():
            lost = make_task("completed")
            projection.project_due()  # in this transaction, not after it (D8)
            evict_all(later)
            written = rows_of(lost)
            assert retention.prune(later).rows == written
        assert not AguiEvent.objects.filter(task=lost).exists()
        event = client.recv()
        while event["type"] != "STATE_SNAPSHOT":  # nothing of the lost task comes first
            assert lost.id not in str(event)
            event = client.recv()
        assert event["snapshot"] == selectors.snapshot()
        assert kept.id in event["snapshot"]["view"]["tasks"]
    finally:
        client.close()
