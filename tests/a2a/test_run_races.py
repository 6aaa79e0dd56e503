"""A change that lands between a run's unlocked read and its locked write ends the slice
quietly: a cancel between the worker's read of a submitted task and its start, or between
an agent's last look at its task and the input request it opens. Real threads, each with
its own connection, against the test database (SQLite or PostgreSQL); the interleaving is
forced by holding the run at the exact point (a wrapper around the real read that waits
until the other thread's change has committed), so each test meets the race every time.

Why: before, the start raised TransitionRefused out of the slice — a traceback in the
worker's log and the job FAILED, though the task ended canceled as asked (1-2 times in
every run of the A2A 0.3 kit, issue 31)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from asgiref.sync import SyncToAsync
from django.db import connection, connections
from django_tasks import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from a2a import selectors, services
from a2a.lifecycle import State
from a2a.models import Task
from a2a.runtime import executor, leases
from a2a.runtime.models import RunLease
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)
WAIT = 60  # seconds: a bound for a thread on a loaded machine, never reached when all is well


@pytest.fixture(autouse=True)
def run_thread_connection_closed() -> Iterator[None]:
    """A slice's database calls run in asgiref's single sync thread (faults.in_db_thread):
    its connection is closed after the test, so the test database can be dropped."""
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=WAIT)


def new_task() -> Task:
    """A one-item batch: it runs for a moment (TASKDECK_AGENT_DELAY_SCALE) and completes."""
    return services.create_task(
        services.IncomingMessage(message_id="m1", parts=[{"kind": "text", "text": "go"}]),
        actor=CLIENT,
        skill="batch",
        metadata={"items": 1},
    )


@contextmanager
def meanwhile(change: Callable[[], object]) -> Iterator[Callable[[], None]]:
    """Yields `between()`: called in the run's thread, it has `change` run and commit in
    another thread (its own connection) and returns once it has. Re-raises its error."""
    errors: list[BaseException] = []

    def other() -> None:
        try:
            change()
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    def between() -> None:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive(), "the concurrent change did not finish"

    yield between
    if errors:
        raise errors[0]


def run_jobs() -> None:
    """django-tasks-db's own worker, in this process, until no job is ready."""
    Worker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=leases.WORKER_ID,
        excluded_queue_names=[],
    ).run()


def test_a_cancel_between_the_workers_read_and_its_start_is_nothing_to_do(
    transactional_db, monkeypatch, caplog
):
    task = new_task()
    read = selectors.task_row
    held: list[str] = []

    with meanwhile(lambda: services.cancel_task(task.id, actor=CLIENT, reason="stop")) as between:

        def read_then_cancel(task_id: str):
            row = read(task_id)
            if not held:  # the slice's read: it saw the task submitted
                held.append(row.state)
                between()
            return row

        monkeypatch.setattr(selectors, "task_row", read_then_cancel)
        with caplog.at_level(logging.INFO):
            run_jobs()

    assert held == [State.SUBMITTED]  # the run read it before the cancel: the race was met
    assert Task.objects.get(pk=task.id).state == State.CANCELED
    job = DBTaskResult.objects.get()
    assert job.status == TaskResultStatus.SUCCESSFUL, job.traceback
    assert job.return_value == "nothing to do: task is canceled"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not task.events.filter(kind="started").exists()
    assert RunLease.objects.get(task_id=task.id).owner == ""  # let go, nothing to retry


def test_a_pause_between_the_read_and_the_start_leaves_the_run_to_the_resume(
    transactional_db, monkeypatch
):
    """The same race with a pause: the slice does nothing, the resume runs the task."""
    task = new_task()
    read = selectors.task_row
    held: list[str] = []

    with meanwhile(lambda: services.pause_task(task.id, actor=CLIENT, reason="hold")) as between:

        def read_then_pause(task_id: str):
            row = read(task_id)
            if not held:
                held.append(row.state)
                between()
            return row

        monkeypatch.setattr(selectors, "task_row", read_then_pause)
        assert executor.run(task.id) == "nothing to do: task is paused-by-client"

    assert held == [State.SUBMITTED]
    services.resume_task(task.id, actor=CLIENT)
    run_jobs()
    assert Task.objects.get(pk=task.id).state == State.COMPLETED
    assert DBTaskResult.objects.exclude(status=TaskResultStatus.SUCCESSFUL).count() == 0


def test_a_cancel_before_an_input_request_opens_ends_the_slice_not_as_an_agent_error(
    transactional_db, monkeypatch, settings, caplog
):
    """The agent looked at its task (working) and asks for input; a cancel commits before
    the request does. The refusal ends the slice: no agent error logged, the task canceled."""
    monkeypatch.setitem(settings.TASKDECK["RUNTIME"], "DELAY_SCALE", 0.01)
    task = services.create_task(
        services.IncomingMessage(message_id="m1", parts=[{"kind": "text", "text": "ship"}]),
        actor=CLIENT,
        skill="approval",
    )
    ask = services.request_input
    with meanwhile(lambda: services.cancel_task(task.id, actor=CLIENT, reason="stop")) as between:

        def cancel_then_ask(*args, **kwargs):
            between()
            return ask(*args, **kwargs)

        monkeypatch.setattr(services, "request_input", cancel_then_ask)
        with caplog.at_level(logging.INFO):
            run_jobs()

    assert Task.objects.get(pk=task.id).state == State.CANCELED
    job = DBTaskResult.objects.get()
    assert job.status == TaskResultStatus.SUCCESSFUL, job.traceback
    assert job.return_value == "stopped: task is canceled"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
