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
from agui import projection
from tests.agui.test_projection_after_commit import working_task
from tests.agui.test_projection_failures import live_projector, until, view_reflects  # noqa: F401
from tests.conftest import AGENT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_a_writer_waits_for_the_pass_of_its_change_once_the_projector_is_behind(
    live_projector,  # noqa: F811
    monkeypatch,
):
    monkeypatch.setattr(projection, "BEHIND_WAIT_SECONDS", 30.0)  # this test's own bound
    slow, waiting, mine = working_task(), working_task(), working_task()
    until(lambda: all(view_reflects(t.id) for t in (slow, waiting, mine)), "the tasks projected")
    in_pass, release = threading.Event(), threading.Event()

    def hold(held: list[str]) -> None:
        if slow.id in held:
            in_pass.set()
            release.wait(30)

    seen: dict[str, bool] = {}

    def write() -> None:
        try:
            services.emit_text(mine.id, "step 2", actor=AGENT)
            seen["projected when answered"] = view_reflects(mine.id)
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
