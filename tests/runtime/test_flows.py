"""Each demo agent's whole flow, run by real worker processes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from a2a import services
from a2a.lifecycle import TransitionRefused
from a2a.models import Suspension, Task
from a2a.runtime import scheduler
from a2a.runtime.models import StepRecord
from tests.conftest import CLIENT, answer
from tests.runtime.conftest import state, wait_for, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def status_text(task_id: str) -> str:
    task = Task.objects.select_related("status_message").get(pk=task_id)
    return " ".join(
        p.get("text", "") for p in (task.status_message.parts if task.status_message else [])
    )


@pytest.mark.parametrize(
    ("decision", "expected"),
    [("approve", "Plan carried out. Approver said: ship it"), ("reject", "Plan rejected: ship it")],
)
def test_approval_asks_then_acts_on_the_answer(start, decision, expected):
    task = start("approval", "Roll out 2.14")
    wait_state(task.id, "input-required")
    assert task.artifacts.filter(name="plan.md").exists()
    answer(task, {"decision": {"decision": decision, "comment": "ship it"}})
    wait_state(task.id, "completed")
    assert expected in status_text(task.id)
    names = list(StepRecord.objects.filter(task=task).values_list("name", flat=True))
    assert names.count("draft 1") == 1 and ("act 1" in names) == (decision == "approve")


# --- pausing a running task -------------------------------------------------------------------


def item_steps(task: Task) -> list[str]:
    return list(
        StepRecord.objects.filter(task=task, name__startswith="item ").values_list(
            "name", flat=True
        )
    )


def results(task: Task) -> list[int]:
    """Item numbers in the batch artifact, in order (each must appear exactly once)."""
    artifact = task.artifacts.get(artifact_id="batch-results")
    return [part["data"]["item"] for part in artifact.parts]


def started_items(task: Task, n: int) -> None:
    wait_for(lambda: len(item_steps(task)) >= n, what=f"{n} items processed")


@pytest.mark.parametrize("mode", ["finish_step", "interrupt_immediate"])
def test_pause_stops_a_running_batch_and_resume_finishes_it_exactly_once(start, mode):
    task = start("batch", items=30, pace=2)
    started_items(task, 3)
    outcome = services.pause_task(task.id, actor=CLIENT, reason="check output", mode=mode)
    assert outcome.task.state == "paused-by-client"  # at once, before the worker stops
    wait_idle(task.id)
    done_while_paused = len(item_steps(task))
    assert done_while_paused < 30
    # the worker commits nothing more while paused: no step appears after it let go
    assert len(item_steps(task)) == done_while_paused
    services.resume_task(task.id, actor=CLIENT)
    wait_state(task.id, "completed")
    assert sorted(item_steps(task)) == sorted(f"item {i}" for i in range(30))
    assert results(task) == list(range(30))


def test_wait_for_completion_lets_the_turn_finish_then_holds(start):
    task = start("batch", items=12, pace=2)
    started_items(task, 2)
    services.pause_task(task.id, actor=CLIENT, reason="let it finish", mode="wait_for_completion")
    wait_idle(task.id)
    # the turn ran to its end (every item) but the task did not complete while paused
    assert len(item_steps(task)) == 12 and state(task.id) == "paused-by-client"
    services.resume_task(task.id, actor=CLIENT)
    wait_state(task.id, "completed")
    assert results(task) == list(range(12))


def test_cancel_while_paused_stops_for_good(start):
    task = start("batch", items=30, pace=2)
    started_items(task, 2)
    services.pause_task(task.id, actor=CLIENT)
    wait_idle(task.id)
    services.cancel_task(task.id, actor=CLIENT, reason="not needed")
    before = len(item_steps(task))
    with pytest.raises(TransitionRefused):
        services.resume_task(task.id, actor=CLIENT)
    wait_idle(task.id)
    assert state(task.id) == "canceled" and len(item_steps(task)) == before


def test_cancel_interrupts_a_running_step(start):
    task = start("batch", items=30, pace=4)
    started_items(task, 1)
    services.cancel_task(task.id, actor=CLIENT)
    wait_idle(task.id, timeout=5)
    assert state(task.id) == "canceled" and len(item_steps(task)) < 30


def test_double_resume_one_wins_and_work_runs_once(start):
    task = start("batch", items=8, pace=2)
    started_items(task, 1)
    services.pause_task(task.id, actor=CLIENT)
    wait_idle(task.id)
    outcomes = []
    for _ in range(2):
        try:
            services.resume_task(task.id, actor=CLIENT)
            outcomes.append("resumed")
        except TransitionRefused:
            outcomes.append("refused")
    assert sorted(outcomes) == ["refused", "resumed"]
    wait_state(task.id, "completed")
    assert results(task) == list(range(8))


# --- budget: an agent asks to be paused; resume with and without input ------------------------


def test_budget_agent_pauses_itself_and_uses_the_resume_input(start):
    task = start("budget", budget=150)
    wait_state(task.id, "paused-by-client")
    task.refresh_from_db()
    assert task.current_suspension.reason.startswith("token budget exceeded")
    assert task.current_suspension.requested_by == "agent:budget"
    wait_idle(task.id)
    services.resume_task(task.id, actor=CLIENT)  # no input: still over budget
    wait_for(
        lambda: Task.objects.get(pk=task.id).suspensions.count() == 2,
        what="a second self-pause",
    )
    wait_state(task.id, "paused-by-client")
    assert "budget is now 150" in status_text_history(task.id)
    wait_idle(task.id)
    services.resume_task(task.id, actor=CLIENT, resume_input={"budget": 1000})
    wait_state(task.id, "completed")
    assert "budget is now 1150" in status_text_history(task.id)


def status_text_history(task_id: str) -> str:
    task = Task.objects.get(pk=task_id)
    return " ".join(p.get("text", "") for m in task.messages.filter(role="agent") for p in m.parts)


# --- parking: woken by event, trigger, timeout ----------------------------------------


def parked_build(start, **metadata) -> tuple[Task, int]:
    task = start("ci-wait", build=1234, **metadata)
    wait_state(task.id, "paused-by-agent")
    wait_idle(task.id)
    return task, 1234


def report(task: Task) -> dict:
    return task.artifacts.get(name="build-report.json").parts[0]["data"]


def post_event(rpc, name: str, payload: dict) -> dict:
    response = rpc.http.post(
        "/api/events",
        json={"name": name, "payload": payload},
        headers={"Authorization": f"Bearer {rpc.token}"},
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_event_wakes_a_parked_task(start, rpc):
    task, build = parked_build(start)
    woke = post_event(rpc, f"ci.build.completed:{build}", {"status": "green"})["woke"]
    assert [w["taskId"] for w in woke] == [task.id]
    wait_state(task.id, "completed")
    assert report(task) == {"build": build, "status": "green", "cause": "external_event"}


def test_trigger_wakes_only_on_a_matching_payload(start, rpc):
    task, build = parked_build(start)
    assert post_event(rpc, "ci.status", {"build": build, "state": "running"})["woke"] == []
    assert post_event(rpc, "ci.status", {"build": 9, "state": "finished"})["woke"] == []
    assert state(task.id) == "paused-by-agent"
    post_event(rpc, "ci.status", {"build": build, "state": "finished", "status": "red"})
    wait_state(task.id, "completed")
    assert report(task) == {"build": build, "status": "red", "cause": "condition_fired"}


def make_due(task: Task) -> None:
    """Test setup: move the open deadline into the past instead of waiting for it."""
    Suspension.objects.filter(task=task, ended_at__isnull=True).update(
        deadline=timezone.now() - timedelta(seconds=1)
    )


def test_timeout_fail_fails_the_parked_task(start):
    task, _ = parked_build(start)
    make_due(task)
    wait_state(task.id, "failed")
    assert task.events.get(kind="timed_out").actor == "scheduler:taskdeck"


def test_timeout_resume_with_input_gives_the_agent_the_default(start):
    task, build = parked_build(start, onTimeout="resume_with_input")
    make_due(task)
    wait_state(task.id, "completed")
    assert report(task) == {"build": build, "status": "assumed-green", "cause": "timeout"}


def test_scheduled_agent_resumes_with_its_summary_at_the_deadline(start):
    task = start("scheduled")
    wait_state(task.id, "paused-by-agent")
    assert task.suspensions.get().deadline is not None
    make_due(task)
    wait_state(task.id, "completed")
    text = status_text_history(task.id)
    assert "Woke (timeout)" in text and "nothing to do until the deadline" in text


def test_operator_hold_stops_conditions_from_firing(start, rpc):
    task, build = parked_build(start)
    services.pause_task(task.id, actor=CLIENT, reason="incident")
    assert post_event(rpc, f"ci.build.completed:{build}", {"status": "green"})["woke"] == []
    # the agent's own wait ended (superseded): its deadline, even past, fires nothing. (This
    # used to call make_due, which moved the *hold's* deadline into the past: the scheduler
    # then failed the task whenever its tick came before the resume below — a flake.)
    Suspension.objects.filter(task=task, ending="superseded").update(
        deadline=timezone.now() - timedelta(seconds=1)
    )
    assert scheduler.fire_due_timeouts() == 0
    assert state(task.id) == "paused-by-client"
    services.resume_task(task.id, actor=CLIENT, resume_input={"status": "manual"})
    wait_state(task.id, "completed")
    assert report(task)["cause"] == "explicit_resume"


@pytest.mark.parametrize(
    ("continue_transcript", "seen"), [(True, "I see 2 messages"), (False, "a fresh turn")]
)
def test_agent_sees_full_transcript_or_a_digest(start, continue_transcript, seen):
    task, _ = parked_build(start)
    services.resume_task(task.id, actor=CLIENT, continue_transcript=continue_transcript)
    wait_state(task.id, "completed")
    assert seen in status_text_history(task.id)
