"""On SQLite a projector thread's pass takes every task due, not only its own process's
(agui.projection `take_all`): a pass is the one writer then, so whatever another process
committed before it is its to project. Another process's change then reaches the view
with the first pass of any process, not only with its own process's pass, which waits at
the writers' queue like every request (docs/agui.md, "Who runs passes").

A task that cannot be projected must still fail nobody else's pass more than once: the
pass that took it uninvited leaves it to its own process (which logs the failure), and
takes it no more for a while.
"""

from __future__ import annotations

import logging

import pytest
from django.db import connection

from a2a import services
from agui import projection
from tests.agui.test_projection_after_commit import caught_up, due, working_task
from tests.agui.test_projection_failures import errors, poisoned_pause
from tests.conftest import CLIENT

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor == "postgresql",
        reason="SQLite's passes only: PostgreSQL's run side by side and claim their tasks",
    ),
]


def test_a_pass_projects_what_another_process_left_due(held_projector):
    ours, theirs = working_task(), working_task()
    projection.project_due()
    services.pause_task(ours.id, actor=CLIENT, reason="ours")
    services.pause_task(theirs.id, actor=CLIENT, reason="another process's")
    assert due(ours.id) and due(theirs.id)

    assert projection.project([ours.id]) == {ours.id}  # its own only, as before
    assert due(theirs.id)
    services.resume_task(ours.id, actor=CLIENT)

    assert projection.project([ours.id], take_all=True) == {ours.id, theirs.id}
    caught_up(ours.id)
    caught_up(theirs.id)


@pytest.mark.projection_fails
def test_a_task_that_fails_a_pass_it_was_taken_into_is_left_to_its_own(
    held_projector, fresh_failures, caplog
):
    caplog.set_level(logging.WARNING, logger="agui.projection")
    ours, other, bad = working_task(), working_task(), working_task()
    projection.project_due()
    poisoned_pause(bad.id)
    services.pause_task(ours.id, actor=CLIENT, reason="ours")

    # the pass that took `bad` uninvited fails; its own task is projected alone, and the
    # failure is not this pass's to report
    assert projection.project([ours.id], take_all=True) == {ours.id}
    assert errors(caplog) == []
    assert due(bad.id)

    # the next pass leaves `bad` out: it does not fail again, and takes the rest
    failures = len(caplog.records)
    services.resume_task(ours.id, actor=CLIENT)
    services.pause_task(other.id, actor=CLIENT, reason="another process's")
    assert projection.project([ours.id], take_all=True) == {ours.id, other.id}
    assert len(caplog.records) == failures
    caught_up(other.id)

    # its own process's pass fails it, and says so once
    assert projection.project([bad.id]) == set()
    [error] = errors(caplog)
    assert bad.id in error
