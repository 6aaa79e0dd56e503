"""A process that writes faster than its projector thread projects (agui.projection,
`wake` and `Projector.add`): once a change has waited BEHIND_SECONDS for the thread, the
next writer answers only after the thread's pass of its own change, so the load slows to
what the projection keeps up with instead of leaving the live view seconds behind.

PostgreSQL only: the test holds a pass open while another thread writes, which SQLite's
one writer at a time does not allow."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from a2a import services
from a2a.models import Task
from agui import projection
from agui.models import ViewTask
from tests.agui.test_projection_after_commit import working_task
from tests.agui.test_projection_failures import live_projector, until  # noqa: F401
from tests.conftest import AGENT


def reflects(task_id: str) -> bool:
    """The task's view row is at the task's version (False before it has one)."""
    row = ViewTask.objects.filter(task_id=task_id).values_list("task_version", flat=True)
    return list(row) == [Task.objects.get(pk=task_id).version]


pytestmark = pytest.mark.django_db(transaction=True)


def test_a_writer_waits_for_the_pass_of_its_change_once_the_projector_is_behind(
    live_projector,  # noqa: F811
    monkeypatch,
):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (run with DATABASE_URL=postgres://…)")
    monkeypatch.setattr(projection, "BEHIND_WAIT_SECONDS", 30.0)  # this test's own bound
    slow, waiting, mine = working_task(), working_task(), working_task()
    until(lambda: all(reflects(t.id) for t in (slow, waiting, mine)), "the tasks projected")
    in_pass, release = threading.Event(), threading.Event()

    def hold(held: list[str]) -> None:
        if slow.id in held:
            in_pass.set()
            release.wait(30)

    seen: dict[str, bool] = {}

    def write() -> None:
        try:
            services.emit_text(mine.id, "step 2", actor=AGENT)
            seen["projected when answered"] = reflects(mine.id)
        finally:
            connection.close()

    monkeypatch.setattr(projection, "before_commit", hold)
    try:
        services.emit_text(slow.id, "step 2", actor=AGENT)  # the thread's pass holds here
        assert in_pass.wait(30)
        services.emit_text(waiting.id, "step 2", actor=AGENT)  # handed over: not behind yet
        with live_projector.lock:
            live_projector.waiting_since -= projection.BEHIND_SECONDS  # it waited that long
        writer = threading.Thread(target=write)
        writer.start()
        until(lambda: mine.id in live_projector.pending, "the writer's change handed over")
    finally:
        release.set()
    writer.join(30)
    assert seen == {"projected when answered": True}
