"""When a projection pass fails (docs/design/projection-after-commit.md, D8: "a pass that
raises … is logged and its tasks are retried by the sweep; it never retries in a loop by
itself"): the projector thread lives on, the failing task's changes stay due and are
projected once it can be, the other tasks of its pass are not held up, the failure is
logged once, and an operator's action whose catch-up fails still answers.

The failures are real: the database refuses a pass's write (an AG-UI interrupt row already
holds the id the pass creates — what a process of the previous release, still projecting
in its writers' transactions, leaves: the design's open question 1), the server drops the
projector's connection mid-pass, or another pass holds the task past `catch_up`'s bound."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from a2a import events, services
from a2a.models import Task
from agui import projection
from agui.models import Interrupt, ViewTask
from tests.agui.conftest import LONG_REST
from tests.agui.test_projection_after_commit import caught_up, due, projected, working_task
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, end_backend

pytestmark = pytest.mark.django_db(transaction=True)


def until(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll `check` (a database read) until it is true; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def errors(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "agui.projection" and r.levelno >= logging.ERROR
    ]


def stray_interrupt(handle: str, task_id: str) -> None:
    """The AG-UI interrupt row of this pause, already there: the pass that projects the
    pause creates it and the database refuses the duplicate key."""
    Interrupt.objects.create(
        interrupt_id=handle,
        task_id=task_id,
        kind=Interrupt.Kind.PAUSE,
        reason="a2a:paused",
        content={"stage": "paused", "taskId": task_id},
        pending=False,
        created_at=timezone.now(),
    )


def poisoned_pause(task_id: str) -> str:
    """Pause the task, and in the same commit leave the stray row its projection will
    collide with; returns the pause's handle."""
    with transaction.atomic():
        services.pause_task(task_id, actor=CLIENT, reason="look")
        handle = Task.objects.get(pk=task_id).current_suspension.handle
        stray_interrupt(handle, task_id)
    return handle


def repair(handle: str) -> None:
    Interrupt.objects.filter(interrupt_id=handle).delete()


class Stop(Exception):
    pass


class StoppableProjector(projection.Projector):
    """The production Projector, its thread running the production loop (`_run`); the test
    ends it by a last `take` that closes the thread's connection and leaves the loop."""

    stopping = False

    def _run(self) -> None:
        with contextlib.suppress(Stop):
            super()._run()

    def take(self) -> list[str]:
        if self.stopping:
            connection.close()
            raise Stop
        return super().take()

    def stop(self) -> None:
        self.stopping = True
        self.woken.set()
        if self.thread is not None:
            self.thread.join(timeout=10)


@pytest.fixture
def live_projector(settings, monkeypatch) -> Iterator[StoppableProjector]:
    """The default `thread` mode with a projector thread of its own, as a web process runs
    it: every commit wakes it, and it projects."""
    view = {**settings.TASKDECK["VIEW"], "PROJECTION": "thread"}
    settings.TASKDECK = {**settings.TASKDECK, "VIEW": view}
    live = StoppableProjector()
    monkeypatch.setattr(projection, "_projector", live)
    monkeypatch.setattr(projection, "_failing", projection._Failing())
    monkeypatch.setattr(projection, "RETRY_SECONDS", LONG_REST)
    yield live
    live.stop()
    assert live.thread is None or not live.thread.is_alive()


def view_reflects(task_id: str) -> bool:
    """The task's view row is at the task's version (False before it has one)."""
    view = ViewTask.objects.filter(task_id=task_id).first()
    return view is not None and view.task_version == Task.objects.get(pk=task_id).version


# --- the projector thread -------------------------------------------------------------------


@pytest.mark.projection_fails
def test_a_task_the_thread_cannot_project_fails_alone_and_the_thread_goes_on(
    live_projector, caplog
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    good, bad = working_task(), working_task()
    until(lambda: due(good.id) == due(bad.id) == [], "the thread projected the new tasks")
    thread, bad_before = live_projector.thread, projected(bad.id)

    with transaction.atomic():  # one commit: the thread is likely handed both at once
        services.pause_task(good.id, actor=CLIENT, reason="look")
        handle = poisoned_pause(bad.id)
    until(lambda: view_reflects(good.id), "the good task projected")
    until(lambda: errors(caplog), "the failure logged")
    caught_up(good.id)
    assert thread.is_alive() and live_projector.thread is thread
    assert due(bad.id) == [Task.objects.get(pk=bad.id).version]  # rolled back: still due
    assert projected(bad.id).entry == bad_before.entry
    [error] = errors(caplog)
    assert bad.id in error and good.id not in error

    # the thread waits for the next wake, it does not retry; the sweep lets the task rest
    assert projection.sweep(older_than=0) == 0
    assert projection.sweep(older_than=0) == 0
    assert len(errors(caplog)) == 1

    # the same thread projects what comes next, and the failed task with its next change
    # once it can be projected
    services.pause_task(good.id, actor=CLIENT, reason="again")
    until(lambda: view_reflects(good.id), "the next change projected")
    repair(handle)
    services.resume_task(bad.id, actor=CLIENT)
    until(lambda: view_reflects(bad.id), "the repaired task projected on its next wake")
    caught_up(bad.id)
    caught_up(good.id)
    assert Interrupt.objects.get(interrupt_id=handle).content["stage"] == "resumed"
    assert live_projector.thread is thread and thread.is_alive()
    assert len(errors(caplog)) == 1


@pytest.mark.projection_fails
@pytest.mark.postgres
def test_the_thread_survives_its_connection_dropped_mid_pass(live_projector, caplog):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    task = working_task()
    until(lambda: due(task.id) == [], "the new task projected")
    dropped = threading.Event()

    def drop_my_connection(held: list[str]) -> None:
        """Inside the pass, before its commit: the server ends this backend (as a restart
        or an idle-in-transaction timeout would); the pass's commit meets a dead socket."""
        if dropped.is_set():
            return
        end_backend(connection.connection.info.backend_pid)
        dropped.set()

    thread = live_projector.thread
    try:
        projection.before_commit = drop_my_connection
        services.pause_task(task.id, actor=CLIENT, reason="look")
        until(dropped.is_set, "the connection dropped")
        until(lambda: errors(caplog), "the failure logged")
        assert due(task.id) == [Task.objects.get(pk=task.id).version]
        services.resume_task(task.id, actor=CLIENT)  # the next wake: a new connection
        until(lambda: view_reflects(task.id), "projected on the next wake")
    finally:
        projection.before_commit = None
    caught_up(task.id)
    assert live_projector.thread is thread and thread.is_alive()
    assert len(errors(caplog)) == 1


# --- the sweep --------------------------------------------------------------------------------


@pytest.mark.projection_fails
def test_the_sweep_projects_the_others_and_lets_a_failing_task_rest(
    held_projector, fresh_failures, caplog
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    first, bad, last = working_task(), working_task(), working_task()
    projection.project_due()
    services.pause_task(first.id, actor=CLIENT, reason="look")
    handle = poisoned_pause(bad.id)  # oldest but one: in the sweep's first batch
    services.pause_task(last.id, actor=CLIENT, reason="look")

    assert projection.sweep(older_than=0) == 2  # the scheduler's job, its grace period 0
    caught_up(first.id)
    caught_up(last.id)
    assert due(bad.id) == [Task.objects.get(pk=bad.id).version]
    [error] = errors(caplog)
    assert bad.id in error

    # the scheduler ticks four times a second: the failing task is not tried (nor logged)
    # at every tick
    for _ in range(5):
        assert projection.sweep(older_than=0) == 0
    assert len(errors(caplog)) == 1
    assert due(bad.id) == [Task.objects.get(pk=bad.id).version]

    repair(handle)  # its rest is not over: still left alone by the sweep…
    assert projection.sweep(older_than=0) == 0
    assert projection.project_due() == 1  # …but a projector thread's start takes it
    caught_up(bad.id)


@pytest.mark.projection_fails
def test_the_sweep_tries_a_failed_task_again_after_its_rest(
    held_projector, fresh_failures, caplog, monkeypatch
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    monkeypatch.setattr(projection, "RETRY_SECONDS", 0.0)  # no rest: every sweep tries it
    task = working_task()
    projection.project_due()
    handle = poisoned_pause(task.id)
    assert projection.sweep(older_than=0) == 0
    assert projection.sweep(older_than=0) == 0
    assert len(errors(caplog)) == 2  # one line per try, never more
    repair(handle)
    assert projection.sweep(older_than=0) == 1
    caught_up(task.id)
    assert projection._failing.tasks == {}  # projected: its failures forgotten


# --- catch_up: the operator's action answers anyway -------------------------------------------


@pytest.mark.projection_fails
def test_a_dashboard_action_answers_when_its_catch_up_fails_and_the_view_follows_later(
    held_projector, fresh_failures, op, caplog
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    task = working_task()
    projection.project_due()
    handle = poisoned_pause(task.id)  # committed, not projected (the thread is held)

    response = op.post(f"/tasks/{task.id}/resume", {"handle": handle})
    assert response.status_code == 302  # the resume committed; its catch-up failed
    assert Task.objects.get(pk=task.id).state == "working"
    [error] = errors(caplog)
    assert task.id in error
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert 'data-state="working"' in html  # the core's rows, at once
    assert "Live details catching up…" in html
    assert len(due(task.id)) == 2  # the pause and the resume

    repair(handle)
    assert projection.project_due() == 1
    caught_up(task.id)
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "Live details catching up" not in html
    assert Interrupt.objects.get(interrupt_id=handle).content["stage"] == "resumed"


@pytest.mark.postgres
def test_an_answer_whose_catch_up_times_out_still_answers_and_leaves_the_inbox_later(
    held_projector, fresh_failures, op, caplog
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    task = working_task()
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    projection.project_due()
    interrupt = Interrupt.objects.get(task=task, pending=True)

    # another projector's pass holds the task (its advisory lock, in its transaction)
    other = psycopg.connect(**connection.get_connection_params())
    try:
        other.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [projection.LOCK_CLASS, task.id]
        )
        response = op.post(
            f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve", "next": "/inbox"}
        )
        assert response.status_code == 302 and response.url == "/inbox"
        html = op.get("/inbox").content.decode()
        assert f'action="/inbox/{interrupt.pk}/answer"' in html  # the view lags behind…
        assert Task.objects.get(pk=task.id).state == "working"  # …the answer committed
    finally:
        other.rollback()  # that pass ends (it projected nothing)
        other.close()
    assert errors(caplog) == []  # a held task is no failure of its own…
    assert any(
        task.id in r.getMessage() and "held by another" in r.getMessage() for r in caplog.records
    )  # …said once, as a warning
    assert projection.sweep(older_than=0) == 1  # not resting: the sweep takes it
    caught_up(task.id)
    html = op.get("/inbox").content.decode()
    assert f'action="/inbox/{interrupt.pk}/answer"' not in html


# --- a projector thread's start ----------------------------------------------------------------


def test_a_projector_thread_projects_what_was_left_due_when_it_starts(
    live_projector, hold_projection
):
    hold_projection()  # a process that died after its commits: nobody was woken
    left = working_task()
    services.pause_task(left.id, actor=CLIENT, reason="look")
    assert due(left.id) != [] and live_projector.thread is None
    events.subscribe(projection.wake, on_commit=True)  # the next process, as ready() does
    woke = working_task()  # its first commit starts the thread: it sweeps everything first
    until(lambda: due(left.id) == [] and due(woke.id) == [], "the thread's first sweep")
    caught_up(left.id)
    caught_up(woke.id)
