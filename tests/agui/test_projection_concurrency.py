"""The projection after commit under concurrency (docs/design/projection-after-commit.md,
D8, "No skipped events" and "Several projectors are safe"): real threads, each with its own
PostgreSQL connection. On SQLite a pass is the one writer, so none of these interleavings
can happen there.

The writers commit with this process's projector thread held (`held_projector`), so the
only passes are the ones the tests run."""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable

import jsonpatch
import pytest
from django.db import connection, transaction

from a2a import services
from a2a.errors import NotAllowedNow, StaleHandle, TaskError, ValidationFailed
from a2a.lifecycle import TransitionRefused
from a2a.models import Task
from agui import projection, selectors
from agui.models import AguiEvent, Interrupt
from tests.agui.test_projection_after_commit import (
    caught_up,
    delta_versions,
    due,
    projected,
    replayed,
    working_task,
)
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REFUSALS = (TransitionRefused, StaleHandle, ValidationFailed, NotAllowedNow, TaskError)
WRITERS, PROJECTORS, TASKS, CHANGES = 4, 2, 3, 25


class Threads:
    """Threads whose exceptions fail the test, each closing its own connection."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def start(self, target: Callable[[], object], name: str) -> threading.Thread:
        def run() -> None:
            try:
                target()
            except BaseException as exc:  # reported by join()
                self.errors.append(exc)
            finally:
                connection.close()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()
        return thread

    def join(self, timeout: float = 120.0) -> None:
        for thread in self.threads:
            thread.join(timeout)
            assert not thread.is_alive(), f"{thread.name} did not finish"
        if self.errors:
            raise self.errors[0]


def change(task_id: str, rng: random.Random) -> None:
    """One writer's change of a task: a pause, a resume, a client's message or the agent's
    text, whichever the task's state allows (a refused one changes nothing)."""
    what = rng.choice(["pause", "resume", "message", "text"])
    with contextlib.suppress(*REFUSALS):
        if what == "pause":
            services.pause_task(task_id, actor=CLIENT, reason="hold")
        elif what == "resume":
            services.resume_task(task_id, actor=CLIENT)
        elif what == "message":
            services.add_message(task_id, user_message("more"), actor=CLIENT)
        else:
            services.emit_text(task_id, "step", actor=AGENT)


@pytest.mark.parametrize("writers_project", [False, True], ids=["held", "sync"])
def test_writers_and_projectors_at_once_skip_nothing_and_double_nothing(
    request, writers_project, caplog
):
    """`held`: only the projector threads project; `sync`: each writer projects its own
    change too, right after its commit, waiting for the task's lock (the suite's mode)."""
    if not writers_project:
        request.getfixturevalue("held_projector")
    ids = [working_task().id for _ in range(TASKS)]
    projection.project_due()
    before, cursor = selectors.snapshot(), selectors.cursor()
    activities = {i.interrupt_id: i.content for i in Interrupt.objects.all()}
    writing = threading.Event()
    writing.set()
    threads = Threads()

    def writer(n: int) -> None:
        rng = random.Random(n)
        for _ in range(CHANGES):
            change(rng.choice(ids), rng)

    def projector() -> None:
        while writing.is_set():
            projection.project(ids)

    projectors = Threads()
    for n in range(PROJECTORS):
        projectors.start(projector, f"projector-{n}")
    for n in range(WRITERS):
        threads.start(lambda n=n: writer(n), f"writer-{n}")
    try:
        threads.join()
    finally:
        writing.clear()
        projectors.join()
    # a pass that failed (a writer's, whose error its on-commit delivery logs) is an error
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    projection.project_due()  # what committed after the projectors' last look

    for task_id in ids:
        caught_up(task_id)
        assert Task.objects.get(pk=task_id).version > 3, "the writers changed nothing"
    assert replayed(before, cursor) == selectors.snapshot()
    for row in AguiEvent.objects.filter(id__gt=cursor).order_by("id"):
        if row.type == "ACTIVITY_SNAPSHOT":
            activities[row.event["messageId"]] = row.event["content"]
        elif row.type == "ACTIVITY_DELTA":
            activities[row.event["messageId"]] = jsonpatch.apply_patch(
                activities[row.event["messageId"]], row.event["patch"]
            )
    assert activities == {i.interrupt_id: i.content for i in Interrupt.objects.all()}


def test_a_change_committed_inside_a_pass_keeps_its_due_row_for_the_next(
    held_projector, monkeypatch
):
    """Writer A records version v (holding the task's row lock) before a pass reads the
    task, and commits right after that read, before the pass reads the task's events: the
    pass must project up to v-1 only (the version it read), leave A's due row (read in the
    pass's transaction, after its deletion), and its look-again must project v."""
    task = working_task()
    projection.project_due()
    services.pause_task(task.id, actor=CLIENT, reason="first")  # v-1: due
    v = Task.objects.get(pk=task.id).version + 1
    recorded, may_commit, committed = threading.Event(), threading.Event(), threading.Event()
    threads = Threads()

    def writer_a() -> None:
        with transaction.atomic():
            services.resume_task(task.id, actor=CLIENT)  # records v under the row lock
            recorded.set()
            assert may_commit.wait(30)
        committed.set()

    threads.start(writer_a, "writer-a")
    assert recorded.wait(30)

    unprojected, read, left = projection._unprojected, [], []

    def unprojected_once_a_committed(task_read: Task, current):
        """The pass's read of the task's events; the first time, A commits just before."""
        if not read:
            may_commit.set()
            assert committed.wait(30)
        read.append(task_read.version)
        return unprojected(task_read, current)

    monkeypatch.setattr(projection, "_unprojected", unprojected_once_a_committed)
    monkeypatch.setattr(projection, "before_commit", lambda held: left.append(due(task.id)))
    assert projection.project([task.id]) == {task.id}
    threads.join()
    assert read == [v - 1, v]  # the pass read the task before A committed; its look-again after
    assert left == [[v], []]  # the first pass left A's row; its look-again took it
    assert delta_versions(task.id) == [1, 2, 3]  # created+started, the pause, the resume
    caught_up(task.id)


def test_a_task_held_by_one_pass_is_skipped_by_another_and_its_holder_looks_again(
    held_projector, monkeypatch
):
    task = working_task()
    projection.project_due()
    services.pause_task(task.id, actor=CLIENT, reason="first")
    first_version = Task.objects.get(pk=task.id).version
    inside, release = threading.Event(), threading.Event()
    threads, results = Threads(), []

    def hold(held: list[str]) -> None:
        if threading.current_thread().name == "holder" and not inside.is_set():
            inside.set()
            assert release.wait(30)

    monkeypatch.setattr(projection, "before_commit", hold)
    threads.start(lambda: results.append(projection.project([task.id])), "holder")
    assert inside.wait(30)
    services.resume_task(task.id, actor=CLIENT)  # committed while the holder holds it
    assert due(task.id) == [first_version, first_version + 1]

    assert projection.project([task.id]) == set()  # skipped, not waited for
    assert projected(task.id).task_version == first_version - 1
    release.set()
    threads.join()
    assert results == [{task.id}]
    assert delta_versions(task.id) == [1, 2, 3]  # the held pass, then its look-again
    caught_up(task.id)


def test_two_evictors_at_once_remove_each_finished_task_once(make_task):
    """The scheduler's eviction and a pass that pushes finished tasks out may take the same
    tasks at once (agui.projector `_leave`, one UPDATE for all of them). The second waits
    on the first's row locks, then finds the rows out of the view: each task gets one
    `remove`, at the version after its last, and neither evictor fails (no deadlock)."""
    from agui import projector
    from agui.models import ViewTask
    from tests.agui.test_projection_failures import until
    from tests.agui.test_view_bound import view_settings

    finished = [make_task("completed").id for _ in range(6)]
    before = dict(ViewTask.objects.filter(pk__in=finished).values_list("task_id", "version"))
    first_holds, first_may_commit = threading.Event(), threading.Event()
    evicted: dict[str, int] = {}
    threads = Threads()

    def first() -> None:
        with transaction.atomic():
            evicted["first"] = projector.evict_finished()
            first_holds.set()
            assert first_may_commit.wait(60)

    def second() -> None:
        assert first_holds.wait(60)
        evicted["second"] = projector.evict_finished()

    with view_settings(FINISHED_MAX=0, FINISHED_MINUTES=60):
        threads.start(first, "first evictor")
        threads.start(second, "second evictor")
        assert first_holds.wait(60)
        # the second evictor's UPDATE waits for the first's row locks
        until(lambda: _waiting_on_a_lock("UPDATE %%agui_viewtask%%"), "the second evictor waits")
        first_may_commit.set()
        threads.join()
    assert evicted == {"first": len(finished), "second": 0}
    removals = AguiEvent.objects.filter(task_id__in=finished, type=projector.EVICTION)
    assert sorted(removals.values_list("task_id", "version")) == sorted(
        (task_id, version + 1) for task_id, version in before.items()
    )
    assert not ViewTask.objects.filter(pk__in=finished, in_view=True).exists()


def _waiting_on_a_lock(query: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE %s",
            [query.replace("%%", "%")],
        )
        return cursor.fetchone()[0] > 0
