"""The scheduler marks job rows no worker runs any more, and never a living worker's.

In-process against the test database: rows and beats are written as the worker and its
beat thread write them, then scheduler.reclaim_jobs is called as a tick calls it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.runtime import scheduler
from a2a.runtime.models import WorkerBeat
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)

WORKER = "host:4242"


def running_job(started_seconds_ago: float) -> DBTaskResult:
    """The job row of a run, claimed by WORKER that long ago."""
    task = services.create_task(
        services.IncomingMessage(message_id="m1", parts=[{"kind": "text", "text": "go"}]),
        actor=CLIENT,
        skill="batch",
    )
    row = next(r for r in DBTaskResult.objects.all() if r.args_kwargs["args"] == [task.id])
    DBTaskResult.objects.filter(pk=row.pk).update(
        status=TaskResultStatus.RUNNING,
        started_at=timezone.now() - timedelta(seconds=started_seconds_ago),
        worker_ids=[WORKER],
    )
    return row


def beat(job: DBTaskResult | None, seconds_ago: float = 0.0) -> None:
    at = timezone.now() - timedelta(seconds=seconds_ago)
    WorkerBeat.objects.update_or_create(
        worker=WORKER, defaults={"beat_at": at, "started_at": at, "job_id": job and job.pk}
    )


def status(row: DBTaskResult) -> tuple[str, str]:
    row.refresh_from_db()
    return row.status, row.traceback


def test_a_dead_workers_row_is_marked_at_the_first_tick():
    row = running_job(started_seconds_ago=60)
    beat(row, seconds_ago=60)
    assert scheduler.reclaim_jobs(trust_beats=True, suspects={}) == 1
    state, why = status(row)
    assert state == TaskResultStatus.FAILED and "died" in why


def test_one_beat_naming_no_job_does_not_fail_a_living_workers_run():
    """The beat thread can read "no job" between the claim and task_started, or be held
    up while the job runs: one such beat is not proof. Before two beats were required the
    row was failed at the first tick, under the worker that was running it."""
    row = running_job(started_seconds_ago=60)
    beat(None)
    suspects: dict = {}
    assert scheduler.reclaim_jobs(trust_beats=True, suspects=suspects) == 0
    assert scheduler.reclaim_jobs(trust_beats=True, suspects=suspects) == 0  # same beat
    beat(row)  # the next beat names it: no longer suspect
    assert scheduler.reclaim_jobs(trust_beats=True, suspects=suspects) == 0
    assert suspects == {}
    assert status(row)[0] == TaskResultStatus.RUNNING


def test_a_row_its_living_worker_moved_on_from_is_marked_on_a_second_beat():
    row = running_job(started_seconds_ago=60)
    beat(None, seconds_ago=0.5)
    suspects: dict = {}
    assert scheduler.reclaim_jobs(trust_beats=True, suspects=suspects) == 0
    beat(None)  # a later beat still names another job (here: none)
    assert scheduler.reclaim_jobs(trust_beats=True, suspects=suspects) == 1
    state, why = status(row)
    assert state == TaskResultStatus.FAILED and "no longer runs this job" in why
    assert suspects == {}


def test_without_trusted_beats_nothing_is_marked():
    row = running_job(started_seconds_ago=60)
    beat(row, seconds_ago=60)
    assert scheduler.reclaim_jobs(trust_beats=False, suspects={}) == 0
    assert status(row)[0] == TaskResultStatus.RUNNING


def test_a_worker_has_its_beat_before_it_takes_a_job():
    """run_worker starts the beat before its first job: a worker killed holding a run
    must have a beat that stops, or its run would wait for the lease to expire."""
    from a2a.runtime import beats
    from a2a.runtime.leases import WORKER_ID

    beats.start()
    try:
        assert WorkerBeat.objects.filter(worker=WORKER_ID).exists()  # no wait: already there
    finally:
        beats.stop()
    assert not WorkerBeat.objects.filter(worker=WORKER_ID).exists()


def test_a_worker_that_starts_while_the_database_is_away_beats_once_it_is_back(settings, caplog):
    """The first beat failing (the database away at start-up) does not stop the worker
    from starting: it is logged, and the beat thread writes the row when the database
    answers again. The fault is real: every connection points at a database that is not
    there until the test puts the name back."""
    from django.db import connection

    from a2a.runtime import beats
    from a2a.runtime.leases import WORKER_ID
    from tests.runtime.conftest import wait_for

    runtime = {**settings.TASKDECK["RUNTIME"], "BEAT_SECONDS": 0.05}
    settings.TASKDECK = {**settings.TASKDECK, "RUNTIME": runtime}
    name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = (  # shared by every thread's connection
        "/nonexistent/taskdeck.sqlite3" if connection.vendor == "sqlite" else f"{name}_absent"
    )
    try:
        beats.start()  # returns: the worker goes on to its (retrying) poll loop
        assert "worker beat failed" in caplog.text
    finally:
        connection.close()
        connection.settings_dict["NAME"] = name
    try:
        wait_for(lambda: WorkerBeat.objects.filter(worker=WORKER_ID).exists(), 10, "the beat")
    finally:
        beats.stop()
