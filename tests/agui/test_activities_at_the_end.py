"""When a task ends, every AG-UI activity of it ends too: none stays `awaiting_input`,
`working` or `paused` on a task that is over, whichever of the ending kinds ended it.

The defect this guards: a task that asked for input, got its answer, was paused and then
timed out with `onTimeout: fail` ended `failed`, but its answered question's activity
said `working` for ever (the projection listed the ending kinds by hand and left out
`timed_out`; a2a.event_kinds.ENDING_KINDS is now the one list)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from a2a import services
from a2a.event_kinds import ENDING_KINDS, EventKind
from a2a.lifecycle import Dialect
from a2a.models import Suspension, Task
from agui import projection
from agui.models import Interrupt
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, answer, user_message

pytestmark = pytest.mark.django_db

OPEN_STAGES = {"awaiting_input", "working", "paused"}
TIMEOUT_FAILS = {"timeout": {"durationMinutes": 5, "onTimeout": "fail"}}


def _deadline_passes(task_id: str) -> None:
    """The scheduler's timeout of the task's open pause, its deadline moved into the past
    (a test cannot wait the minutes a deadline is counted in)."""
    susp = Suspension.objects.get(task_id=task_id, ended_at__isnull=True)
    Suspension.objects.filter(pk=susp.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    assert services.expire_suspension(susp.handle, actor=services.SCHEDULER) is not None


def _resume_then(end: Callable[[str], object]) -> Callable[[str], object]:
    def run(task_id: str) -> None:
        services.resume_task(task_id, actor=CLIENT)
        end(task_id)

    return run


# How a paused task is ended by each ending kind (a new ending kind fails the test below
# until it says how its tasks end, and so what its activities must show).
ENDINGS: dict[EventKind, Callable[[str], object]] = {
    EventKind.TIMED_OUT: _deadline_passes,
    EventKind.CANCELED: lambda t: services.cancel_task(t, actor=CLIENT, reason="stop"),
    EventKind.COMPLETED: _resume_then(lambda t: services.complete_task(t, actor=AGENT)),
    EventKind.FAILED: _resume_then(lambda t: services.fail_task(t, actor=AGENT, reason="boom")),
    EventKind.REJECTED: _resume_then(lambda t: services.reject_task(t, actor=AGENT, reason="no")),
}


def test_every_ending_kind_says_how_a_task_ends():
    assert set(ENDINGS) == ENDING_KINDS


def _asked_answered_paused() -> Task:
    task = services.create_task(user_message("go"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    answer(task, {"decision": "approve"})
    services.pause_task(task.id, actor=CLIENT, reason="hold", resume_when=TIMEOUT_FAILS)
    return task


def _stages(task: Task) -> dict[str, str]:
    projection.project_due()  # the test's transaction never commits (tests/agui/conftest.py)
    return {
        str(i.kind): i.content["stage"]
        for i in Interrupt.objects.filter(task_id=task.id).order_by("created_at")
    }


@pytest.mark.parametrize("kind", sorted(ENDING_KINDS))
def test_no_activity_is_left_open_on_an_ended_task(kind):
    task = _asked_answered_paused()
    assert _stages(task) == {"INPUT_REQUEST": "working", "PAUSE": "paused"}
    ENDINGS[kind](task.id)
    task.refresh_from_db()
    assert task.events.order_by("-id").first().kind == kind
    projection.project_due()
    assert not Interrupt.objects.filter(task_id=task.id, pending=True).exists()
    stages = _stages(task)
    assert not OPEN_STAGES & set(stages.values()), stages
    assert stages["INPUT_REQUEST"] == task.state  # the answer's work ended as the task did


def test_a_pause_that_times_out_fails_the_answered_question_too():
    """The reported case, as an operator's board shows it."""
    task = _asked_answered_paused()
    _deadline_passes(task.id)
    task.refresh_from_db()
    assert task.state == "failed"
    assert _stages(task) == {"INPUT_REQUEST": "failed", "PAUSE": "timed_out"}


def test_a_question_paused_unanswered_is_withdrawn_when_the_pause_times_out():
    """Bindu's dialect pauses a task that waits for input: the question is open under the
    pause, and a timeout that fails the task withdraws it."""
    task = services.create_task(user_message("go"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    services.pause_task(
        task.id, actor=CLIENT, reason="hold", resume_when=TIMEOUT_FAILS, dialect=Dialect.BINDU
    )
    _deadline_passes(task.id)
    projection.project_due()
    question = Interrupt.objects.get(task_id=task.id, kind=Interrupt.Kind.INPUT_REQUEST)
    assert not question.pending
    assert question.content["stage"] == "withdrawn"


def test_a_question_asked_again_withdraws_the_old_ones_activity():
    """services.ask_again (a hosted agent's supervisor died while it waited): the old
    question's interrupt is withdrawn, the new one waits for its answer."""
    task = services.create_task(user_message("go"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    first = services.request_input(
        task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST
    )
    services.ask_again(task.id, actor=AGENT, withdrawn=first["requestId"])
    projection.project_due()
    rows = Interrupt.objects.filter(task_id=task.id).order_by("created_at")
    assert [(i.request_id == first["requestId"], i.pending, i.content["stage"]) for i in rows] == [
        (True, False, "withdrawn"),
        (False, True, "awaiting_input"),
    ]
