"""Faults are not failures: a lost database connection, a dead worker or a scheduler that
looks too often never fails a task, floods the queue or leaves job rows RUNNING.

Real worker and scheduler processes (tests/runtime/conftest.py) against the test
database; the faults are real too: PostgreSQL backends terminated by
pg_terminate_backend, workers killed with SIGKILL."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.runtime import scheduler
from a2a.runtime.models import RunLease, StepRecord, WorkerBeat
from tests.conftest import CLIENT
from tests.runtime.conftest import Processes, wait_for, wait_state
from tests.runtime.test_flows import item_steps, results, started_items

pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="terminates PostgreSQL backends"
)


def jobs(task, status=None) -> list[DBTaskResult]:
    """The job rows that run `task` (filtered here: SQLite has no JSON containment)."""
    rows = DBTaskResult.objects.filter(status=status) if status else DBTaskResult.objects.all()
    return [row for row in rows if row.args_kwargs["args"] == [task.id]]


def running_rows_of(worker: str) -> list[DBTaskResult]:
    return [row for row in DBTaskResult.objects.running() if worker in row.worker_ids]


def owner_of(task) -> str:
    return wait_for(
        lambda: (
            RunLease.objects.filter(task=task)
            .exclude(owner="")
            .values_list("owner", flat=True)
            .first()
        ),
        what="the worker running the task",
    )


def released(task) -> bool:
    """The lease is free (the scheduler saw the worker die) or has expired."""
    lease = RunLease.objects.get(task=task)
    return not lease.owner or (lease.expires_at is not None and lease.expires_at < timezone.now())


def terminate_other_backends() -> int:
    """Every connection to the test database but this test's own: the workers', the
    scheduler's — what a database restart or failover does to them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@postgres_only
def test_terminating_every_backend_ten_times_never_fails_the_batch(start, runtime):
    task = start("batch", items=40, pace=2)
    started_items(task, 2)
    for _ in range(10):
        before = len(item_steps(task))
        assert terminate_other_backends() >= 1
        # the next termination waits for the run to make progress again
        wait_for(lambda b=before: len(item_steps(task)) > b, 30, "progress after the fault")
    wait_state(task.id, "completed", "failed", timeout=60)
    task.refresh_from_db()
    assert task.state == "completed", task.events.filter(kind="failed").values("reason")
    assert results(task) == list(range(40))  # every item recorded once, in order
    steps = StepRecord.objects.filter(task=task, name__startswith="item ")
    assert steps.count() == 40
    assert not task.events.filter(kind="failed").exists()


@contextmanager
def own_workers(runtime: Processes, **env: str) -> Iterator[Processes]:
    """The session's two workers, restarted with `env` for one test and back to the
    defaults after it. The scheduler keeps running: what `env` changes here (the lease)
    is the workers' alone, and a scheduler's start-up is seconds on a loaded machine."""

    def restart_workers(with_env: dict[str, str]) -> None:
        for worker in list(runtime.workers):
            worker.terminate()
        for worker in list(runtime.workers):
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                runtime.kill(worker)
        runtime.workers = []
        runtime.env = with_env
        runtime.start_worker()
        runtime.start_worker()

    restart_workers(env)
    try:
        yield runtime
    finally:
        restart_workers({})


def test_with_every_worker_dead_the_scheduler_queues_one_job_per_task(start, runtime):
    # 10 items of 0.5 s each (pace 20 at the tests' delay scale): seconds to spare between
    # the first item and the kill, and little left to run once a worker is back
    task = start("batch", items=10, pace=20)
    started_items(task, 1)
    for worker in list(runtime.workers):
        runtime.kill(worker)  # SIGKILL both: the lease and the job rows are left behind
    wait_for(lambda: released(task), 10, "the dead worker's lease to be given up")
    # 600 scheduler ticks: a minute of the production scheduler with no worker alive
    health = scheduler.Health()
    for _ in range(600):
        scheduler.tick(health)
    assert len(jobs(task, TaskResultStatus.READY)) == 1
    assert len(jobs(task)) <= 3, [(j.status, j.enqueued_at) for j in jobs(task)]
    runtime.start_worker()
    wait_state(task.id, "completed", timeout=60)
    assert results(task) == list(range(10))


# five replacement workers started in turn: 25-30 s each under CI's load on a slow machine
@pytest.mark.timeout(400)
def test_a_killed_worker_is_replaced_by_its_beat_before_its_lease_and_leaves_no_running_job(
    start, runtime
):
    """Lease 60 s, beats every 0.25 s, dead after 1.5 s: five SIGKILLs in a row, and each
    time another worker carries on and the dead one's job row is marked, long before the
    lease could have expired."""
    with own_workers(runtime, TASKDECK_LEASE_SECONDS="60") as procs:
        task = start("batch", items=400, pace=2)
        killed: list[str] = []
        for _ in range(5):
            owner = owner_of(task)
            while owner in killed:
                owner = owner_of(task)
            done = len(item_steps(task))
            procs.kill(procs.worker_with_pid(int(owner.rsplit(":", 1)[1])))
            killed.append(owner)
            new = procs.start_worker()
            # Its start first: a Python process loading Django took 20 s under CI's load on
            # a slow machine, and the bound below is the takeover's, not the start's.
            wait_for(
                lambda p=new.pid: WorkerBeat.objects.filter(worker__endswith=f":{p}").exists(),
                90,
                "the new worker to beat",
            )
            # taken over well inside the lease (60 s): only the beat can have told
            wait_for(lambda d=done: len(item_steps(task)) > d + 1, 20, "the run to move")
            wait_for(
                lambda o=owner: not running_rows_of(o),
                10,
                f"the job row of {owner} to be marked",
            )
        marked = DBTaskResult.objects.filter(exception_class_path="a2a.runtime.beats.WorkerLost")
        assert marked.count() >= 5
        assert all("died" in row.traceback for row in marked)
        running = DBTaskResult.objects.running()
        alive = set(WorkerBeat.objects.values_list("worker", flat=True)) - set(killed)
        assert all(row.worker_ids[-1] in alive for row in running)
        services.cancel_task(task.id, actor=CLIENT, reason="enough")
