"""The one write path: events, subscribers, transactions, suspensions and timeouts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from a2a import events, services
from a2a.conditions import parse_conditions
from a2a.errors import StaleHandle, TaskNotFound, ValidationFailed
from a2a.lifecycle import TransitionRefused
from a2a.models import Suspension, Task, TaskEvent
from tests.conftest import AGENT, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def subscriber():
    """Register a recording subscriber for one test, in either phase."""
    registered = []

    def make(*, on_commit: bool):
        seen: list[TaskEvent] = []

        def fn(event):
            seen.append(event)

        events.subscribe(fn, on_commit=on_commit)
        registered.append(fn)
        return seen

    yield make
    for fn in registered:
        events.unsubscribe(fn)


def kinds(task: Task) -> list[str]:
    return list(task.events.order_by("id").values_list("kind", flat=True))


def test_every_change_appends_one_event_with_actor_and_states(make_task):
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="release freeze")
    services.resume_task(task.id, actor=CLIENT)
    services.complete_task(task.id, actor=AGENT, text="done")
    assert kinds(task) == ["created", "started", "paused", "resumed", "completed"]
    paused = task.events.get(kind="paused")
    assert (paused.from_state, paused.to_state) == ("working", "paused-by-client")
    assert paused.actor == "client:test" and paused.reason == "release freeze"
    versions = list(task.events.order_by("id").values_list("task_version", flat=True))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert Task.objects.get(pk=task.id).version == versions[-1]


def test_on_commit_subscribers_hear_only_committed_changes(make_task, subscriber):
    task = make_task("working")
    inside, after = subscriber(on_commit=False), subscriber(on_commit=True)
    with pytest.raises(RuntimeError), transaction.atomic():
        services.pause_task(task.id, actor=CLIENT)
        assert [e.kind for e in inside] == ["paused"]
        assert after == []  # not before the commit
        raise RuntimeError("roll back")
    assert after == []  # a rolled-back change emits nothing
    assert Task.objects.get(pk=task.id).state == "working"
    services.pause_task(task.id, actor=CLIENT)
    assert [e.kind for e in after] == ["paused"]


def test_failing_in_transaction_subscriber_rolls_the_change_back(make_task):
    task = make_task("working")

    def broken(event):
        raise RuntimeError("projection failed")

    events.subscribe(broken)
    try:
        with pytest.raises(RuntimeError):
            services.pause_task(task.id, actor=CLIENT)
    finally:
        events.unsubscribe(broken)
    assert Task.objects.get(pk=task.id).state == "working"
    assert not Suspension.objects.filter(task=task).exists()


def test_failing_on_commit_subscriber_does_not_block_others(make_task, subscriber):
    task = make_task("working")

    def broken(event):
        raise RuntimeError("socket gone")

    events.subscribe(broken, on_commit=True)
    try:
        later = subscriber(on_commit=True)
        services.pause_task(task.id, actor=CLIENT)
    finally:
        events.unsubscribe(broken)
    assert [e.kind for e in later] == ["paused"]


def test_task_events_are_append_only(make_task):
    event = make_task().events.first()
    event.reason = "rewritten"
    with pytest.raises(ValueError, match="append-only"):
        event.save()


def test_suspension_history_is_kept_across_pauses(make_task):
    task = make_task("working")
    first = services.pause_task(task.id, actor=CLIENT, reason="one").suspension
    services.resume_task(task.id, actor=CLIENT, resume_input={"go": True})
    second = services.pause_task(task.id, actor=CLIENT, reason="two").suspension
    assert first.handle != second.handle
    first.refresh_from_db()
    assert first.ending == "resumed" and first.cause == "explicit_resume"
    assert first.had_resume_input is True and first.resume_input == {"go": True}
    assert Task.objects.get(pk=task.id).current_suspension_id == second.pk
    with pytest.raises(StaleHandle):
        services.resume_task(task.id, actor=CLIENT, handle=first.handle)


def test_operator_hold_over_a_park_supersedes_the_agents_suspension(make_task):
    task = make_task("working")
    parked = services.park_task(
        task.id,
        actor=AGENT,
        reason="ci",
        conditions=parse_conditions({"onEvent": "ci.done", "timeout": {"durationMinutes": 5}}),
    ).suspension
    hold = services.pause_task(task.id, actor=CLIENT, reason="incident").suspension
    parked.refresh_from_db()
    assert parked.ending == "superseded" and parked.ended_by == "client:test"
    assert hold.paused_from == "working" and hold.initiator == "client"
    outcome = services.resume_task(task.id, actor=CLIENT)
    assert outcome.task.state == "working" and outcome.previous_state == "paused-by-client"


def test_cancel_while_paused_closes_the_suspension(make_task):
    task = make_task("paused-by-agent")
    handle = task.current_suspension.handle
    services.cancel_task(task.id, actor=CLIENT, reason="obsolete")
    susp = Suspension.objects.get(handle=handle)
    assert susp.ending == "canceled" and susp.ended_at is not None
    task.refresh_from_db()
    assert task.state == "canceled" and task.current_suspension is None


def test_refused_moves_change_nothing(make_task, unchanged):
    done = make_task("completed")
    with unchanged():
        for call in (
            lambda: services.pause_task(done.id, actor=CLIENT),
            lambda: services.resume_task(done.id, actor=CLIENT),
            lambda: services.cancel_task(done.id, actor=CLIENT),
            lambda: services.park_task(done.id, actor=AGENT, reason="x"),
        ):
            with pytest.raises(TransitionRefused):
                call()
        with pytest.raises(TaskNotFound):
            services.pause_task("no-such-task", actor=CLIENT)


def test_bad_answer_keeps_the_task_waiting(make_task, unchanged):
    task = make_task("input-required")
    request_id = task.input_request["requestId"]
    bad = services.IncomingMessage(
        message_id="answer-1",
        parts=[
            {
                "kind": "data",
                "data": {
                    "type": "a2a.input.response",
                    "requestId": request_id,
                    "values": {"decision": "maybe"},
                },
            }
        ],
    )
    with unchanged(), pytest.raises(ValidationFailed) as err:
        services.add_message(task.id, bad, actor=CLIENT)
    assert list(err.value.errors) == ["message.parts.0.data.values.decision"]
    good = services.IncomingMessage(
        message_id="answer-2",
        parts=[
            {
                "kind": "data",
                "data": {
                    "type": "a2a.input.response",
                    "requestId": request_id,
                    "values": {"decision": {"decision": "approve", "comment": "ship it"}},
                },
            }
        ],
    )
    services.add_message(task.id, good, actor=CLIENT)
    task.refresh_from_db()
    assert task.state == "working" and task.input_request is None
    provided = task.events.get(kind="input_provided")
    assert provided.data["decision"] == "approved"
    assert provided.data["values"]["decision"]["comment"] == "ship it"


def _park_with_timeout(make_task, timeout: dict) -> tuple[Task, str]:
    task = make_task("working")
    susp = services.park_task(
        task.id,
        actor=AGENT,
        reason="wait for build",
        summary="build 12 running",
        conditions=parse_conditions({"timeout": {"durationMinutes": 30, **timeout}}),
    ).suspension
    return task, susp.handle


def _make_due(handle: str) -> None:
    # Test setup only: move the deadline into the past instead of waiting 30 minutes.
    Suspension.objects.filter(handle=handle).update(deadline=timezone.now() - timedelta(seconds=1))


def test_timeout_not_yet_due_does_nothing(make_task, unchanged):
    _, handle = _park_with_timeout(make_task, {})
    with unchanged():
        assert services.expire_suspension(handle, actor=services.SCHEDULER) is None


def test_timeout_fail_fails_the_task(make_task):
    task, handle = _park_with_timeout(make_task, {"onTimeout": "fail"})
    _make_due(handle)
    services.expire_suspension(handle, actor=services.SCHEDULER)
    task.refresh_from_db()
    assert task.state == "failed"
    assert Suspension.objects.get(handle=handle).ending == "timed_out"
    assert "timed out" in task.events.get(kind="timed_out").reason
    # a second firing (another scheduler, or after a restart) is a no-op
    assert services.expire_suspension(handle, actor=services.SCHEDULER) is None


@pytest.mark.parametrize(
    ("timeout", "expected_input"),
    [
        ({"onTimeout": "resume_with_summary"}, {"summary": "build 12 running"}),
        ({"onTimeout": "resume_with_input", "input": {"skip": True}}, {"skip": True}),
    ],
)
def test_timeout_resumes_with_summary_or_input(make_task, timeout, expected_input):
    task, handle = _park_with_timeout(make_task, timeout)
    _make_due(handle)
    services.expire_suspension(handle, actor=services.SCHEDULER)
    task.refresh_from_db()
    susp = Suspension.objects.get(handle=handle)
    assert task.state == "working"
    assert (susp.cause, susp.resume_input) == ("timeout", expected_input)


def test_resume_returns_an_input_required_task_to_input_required(make_task):
    from a2a.lifecycle import Dialect

    task = make_task("input-required")
    services.pause_task(task.id, actor=CLIENT, dialect=Dialect.BINDU)
    outcome = services.resume_task(task.id, actor=CLIENT, dialect=Dialect.BINDU)
    assert outcome.task.state == "input-required"
    assert Task.objects.get(pk=task.id).input_request is not None
