"""A task resumed to work waits for a worker to take its run again, and the live view says
so (issue 15, bug 4): `waitingForWorkerSince` from the `resumed` until the worker's
`picked_up` (a2a.runtime.executor), as a queued task says it by `submitted` until
`started`. No workers run here; tests/runtime/test_resume_waits.py has them take the run."""

from __future__ import annotations

import pytest

from a2a import services
from a2a.formats import ts
from a2a.lifecycle import Dialect
from a2a.models import Task
from a2a.protocol import stream
from agui import projection, selectors
from tests.conftest import AGENT, CLIENT, answer, user_message

pytestmark = pytest.mark.django_db


def entry(task_id: str) -> dict:
    projection.project_due()  # the test's transaction never commits (tests/agui/conftest.py)
    return selectors.snapshot([task_id])["view"]["tasks"][task_id]


def resumed_at(task: Task) -> str:
    return ts(task.events.filter(kind="resumed").latest("id").created_at)


def paused_and_resumed() -> Task:
    """A working task at 28 of 900, paused and resumed: no worker has taken it since."""
    task = services.create_task(user_message("go"), actor=CLIENT, skill="batch")
    services.start_task(task.id, actor=AGENT)
    services.report_progress(task.id, 28, 900, actor=AGENT)
    services.pause_task(task.id, actor=CLIENT, reason="hold")
    services.resume_task(task.id, actor=CLIENT)
    return task


def test_a_resumed_task_waits_for_a_worker_until_one_takes_the_run():
    task = paused_and_resumed()
    shown = entry(task.id)
    assert shown["status"] == "working"
    assert shown["summaries"]["progress"] == {"done": 28, "total": 900}
    assert shown["waitingForWorkerSince"] == resumed_at(task)

    # a client's message meanwhile does not take the run
    services.add_message(task.id, user_message("also this"), actor=CLIENT)
    assert entry(task.id)["waitingForWorkerSince"] == resumed_at(task)

    assert services.note_pickup(task.id, actor=AGENT) is not None
    assert entry(task.id)["waitingForWorkerSince"] is None
    assert entry(task.id)["status"] == "working"
    # once per resume: the next slice notes nothing
    assert services.note_pickup(task.id, actor=AGENT) is None
    assert task.events.filter(kind="picked_up").count() == 1


def test_a_queued_or_never_paused_task_has_no_pickup_to_note():
    task = services.create_task(user_message("go"), actor=CLIENT, skill="batch")
    assert entry(task.id)["waitingForWorkerSince"] is None  # `submitted` says it
    services.start_task(task.id, actor=AGENT)
    assert services.note_pickup(task.id, actor=AGENT) is None
    assert entry(task.id)["waitingForWorkerSince"] is None
    assert not task.events.filter(kind="picked_up").exists()


def test_the_agents_output_or_a_new_pause_ends_the_wait_and_a_new_resume_starts_it():
    task = paused_and_resumed()
    # a worker that never let go (resumed before it stopped) shows itself by its output
    services.emit_text(task.id, "item 29", actor=AGENT)
    assert entry(task.id)["waitingForWorkerSince"] is None

    services.pause_task(task.id, actor=CLIENT, reason="again")
    assert entry(task.id)["waitingForWorkerSince"] is None
    services.resume_task(task.id, actor=CLIENT)
    assert entry(task.id)["waitingForWorkerSince"] == resumed_at(task)
    services.cancel_task(task.id, actor=CLIENT)
    assert entry(task.id)["waitingForWorkerSince"] is None


def test_a_pickup_is_no_status_update_on_a2a_streams():
    task = paused_and_resumed()
    cursor = task.events.latest("id").pk
    services.note_pickup(task.id, actor=AGENT)
    assert task.events.filter(pk__gt=cursor).values_list("kind", flat=True).get() == "picked_up"
    assert stream.events_after(task.id, cursor, Dialect.RFC) == []


# --- the answer to the latest request rides in the entry (issue 15: board chip) ----------


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_entry_carries_the_latest_decision_to_the_end(decision):
    from tests.conftest import APPROVAL_REQUEST

    task = services.create_task(user_message("go"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    assert entry(task.id)["lastDecision"] is None  # asked, not answered
    answer(task, {"decision": {"decision": decision}})
    expected = {"approve": "approved", "reject": "rejected"}[decision]
    assert entry(task.id)["lastDecision"] == expected
    services.emit_text(task.id, "standing down", actor=AGENT)  # later events keep it
    services.complete_task(task.id, actor=AGENT, text="done")
    shown = entry(task.id)
    assert (shown["status"], shown["lastDecision"]) == ("completed", expected)
