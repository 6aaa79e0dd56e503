"""The Zulip-style invariant: the snapshot taken before, plus every STATE_DELTA emitted
since, equals a fresh snapshot — for random sequences of operations over several tasks,
also while finished tasks leave the view (a view that keeps one finished task: nearly
every finish pushes one out). And every ACTIVITY_DELTA applies cleanly to its activity's
snapshot.

The projection runs after commit (docs/design/projection-after-commit.md, D8), and these
tests never commit: the view changes only where hypothesis places a `project` step (and
once at the end), so a burst of any length of one task's changes is coalesced into one
view change — and the replay must still equal a fresh snapshot."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import jsonpatch
import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a import services
from a2a.conditions import parse_conditions
from a2a.errors import NotAllowedNow, StaleHandle, TaskError, ValidationFailed
from a2a.lifecycle import TERMINAL, TransitionRefused
from a2a.models import ProjectionDue, Suspension, Task
from agui import projection, selectors
from agui.models import AguiEvent, Interrupt, ViewTask
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, user_message

pytestmark = pytest.mark.django_db

FINISHED = {str(s) for s in TERMINAL}
REFUSALS = (TransitionRefused, StaleHandle, ValidationFailed, NotAllowedNow, TaskError)
OPS = [
    "create",
    "start",
    "request_input",
    "answer",
    "bad_answer",
    "pause_finish_step",
    "pause_interrupt_immediate",
    "pause_wait_for_completion",
    "park",
    "event",
    "timeout",
    "resume",
    "pick_up",
    "cancel",
    "complete",
    "fail",
    "text",
    "artifact",
    "project",  # a projection pass over every due change
]


def answer(task: Task, decision: str) -> None:
    request_id = (task.input_request or {}).get("requestId", "none")
    services.add_message(
        task.id,
        services.IncomingMessage(
            message_id="answer",
            parts=[
                {
                    "kind": "data",
                    "data": {
                        "type": "a2a.input.response",
                        "requestId": request_id,
                        "values": {"decision": decision},
                    },
                }
            ],
        ),
        actor=CLIENT,
    )


# The state each operation needs, so that most generated steps do something (a random
# pick would almost never answer a request: that needs start, request and answer in turn).
NEEDS = {
    "start": {"submitted"},
    "request_input": {"working"},
    "answer": {"input-required"},
    "bad_answer": {"input-required"},
    "park": {"working"},
    "event": {"paused-by-agent"},
    "timeout": {"paused-by-agent", "paused-by-client"},
    "resume": {"paused-by-agent", "paused-by-client"},
    "pick_up": {"working"},
    "complete": {"working"},
    "fail": {"working"},
    "text": {"working"},
    "artifact": {"working"},
}


# Pauses whose suspension the `timeout` operation rewrote (no service does): the projection
# reads a pause's facts from its row (D8), so these facts depend on when it read them.
REWRITTEN: set[str] = set()
TIMED = ("conditions", "deadline", "onTimeout")


def apply(op: str, tasks: list[str], index: int) -> None:
    if op == "project":
        projection.project_due()
        return
    states = dict(Task.objects.filter(pk__in=tasks).values_list("id", "state"))
    fitting = [t for t in tasks if states[t] in NEEDS.get(op, set(states.values()))]
    if op == "create" or not fitting:
        tasks.append(services.create_task(user_message("go"), actor=CLIENT, skill="batch").id)
        return
    task_id = fitting[index % len(fitting)]
    task = Task.objects.get(pk=task_id)
    if op == "start":
        services.start_task(task_id, actor=AGENT)
    elif op == "request_input":
        services.request_input(task_id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    elif op == "answer":
        answer(task, "approve")
    elif op == "bad_answer":
        answer(task, "maybe")
    elif op.startswith("pause_"):
        services.pause_task(task_id, actor=CLIENT, reason="hold", mode=op.removeprefix("pause_"))
    elif op == "park":
        conditions = parse_conditions(
            {"onEvent": f"ev.{task_id}", "timeout": {"durationMinutes": 5}}
        )
        services.park_task(task_id, actor=AGENT, reason="wait", conditions=conditions)
    elif op == "event":
        services.emit_event(f"ev.{task_id}", {"ok": True}, actor=CLIENT)
    elif op == "timeout":
        open_ = Suspension.objects.filter(task_id=task_id, ended_at__isnull=True).first()
        if open_ is not None:
            REWRITTEN.add(open_.handle)
            Suspension.objects.filter(pk=open_.pk).update(
                deadline=timezone.now() - timedelta(seconds=1),
                conditions={"timeout": {"durationMinutes": 5, "onTimeout": "fail"}},
            )
            services.expire_suspension(open_.handle, actor=services.SCHEDULER)
    elif op == "resume":
        services.resume_task(task_id, actor=CLIENT)
    elif op == "pick_up":  # a worker takes a resumed run (a no-op unless one waits)
        services.note_pickup(task_id, actor=AGENT)
    elif op == "cancel":
        services.cancel_task(task_id, actor=CLIENT)
    elif op == "complete":
        services.complete_task(task_id, actor=AGENT, text="done")
    elif op == "fail":
        services.fail_task(task_id, actor=AGENT, reason="boom")
    elif op == "text":
        services.emit_text(task_id, "step done", actor=AGENT)
    elif op == "artifact":
        services.add_artifact(task_id, actor=AGENT, parts=[{"kind": "text", "text": "x"}])


STEPS = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 5)), min_size=1, max_size=25)
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@EXAMPLES
@given(STEPS)
def test_snapshot_plus_deltas_equals_a_fresh_snapshot(steps):
    replay_equals_fresh(steps)


@EXAMPLES
@given(STEPS)
def test_snapshot_plus_deltas_equals_a_fresh_snapshot_while_finished_tasks_leave(steps):
    view = {**django_settings.TASKDECK["VIEW"], "FINISHED_MAX": 1}
    with override_settings(TASKDECK={**django_settings.TASKDECK, "VIEW": view}):
        fresh = replay_equals_fresh(steps)
    # the bound holds, so with more than one finished task some left, by their deltas
    finished = [e for e in fresh["view"]["tasks"].values() if e["status"] in FINISHED]
    assert len(finished) <= 1


def replay_equals_fresh(steps: list[tuple[str, int]]) -> dict:
    """Apply `steps`; the snapshot before plus the deltas since must equal a fresh one
    (returned)."""
    tasks = list(Task.objects.values_list("id", flat=True)[:3])
    before = selectors.snapshot()
    activities = {i.interrupt_id: i.content for i in Interrupt.objects.all()}
    cursor = selectors.cursor()
    for op, index in steps:
        # refused moves must emit nothing; the comparison below would catch it
        with contextlib.suppress(*REFUSALS):
            apply(op, tasks, index)
    projection.project_due()  # the projection catches up
    assert not ProjectionDue.objects.exists()
    state = before
    for row in AguiEvent.objects.filter(id__gt=cursor).order_by("id"):
        if row.event.get("type") == "STATE_DELTA":  # a task's change, or its leaving
            state = jsonpatch.apply_patch(state, row.event["delta"])
        elif row.type == "ACTIVITY_SNAPSHOT":
            activities[row.event["messageId"]] = row.event["content"]
        elif row.type == "ACTIVITY_DELTA":
            activities[row.event["messageId"]] = jsonpatch.apply_patch(
                activities[row.event["messageId"]], row.event["patch"]
            )
    fresh = selectors.snapshot()
    assert state == fresh
    assert activities == {i.interrupt_id: i.content for i in Interrupt.objects.all()}
    changed = AguiEvent.objects.filter(id__gt=cursor).values("task_id")
    for view in ViewTask.objects.filter(task_id__in=changed):  # the example's tasks
        # each change of a task, however many task versions it folds, is one view version
        logged = AguiEvent.objects.filter(task_id=view.task_id, event__type="STATE_DELTA")
        versions = list(logged.order_by("id").values_list("version", flat=True))
        assert versions == list(range(1, view.version + 1))
        assert view.task_version == Task.objects.get(pk=view.task_id).version
        # …and where the passes fell does not matter: one pass over all the task's events
        # makes the same entry (but its view version) and the same activities
        assert in_one_pass(view.task_id) == (
            {**view.entry, "version": None},
            activities_of(view.task_id),
        )
    return fresh


def activities_of(task_id: str) -> dict[str, dict]:
    """The task's activities, but the timing facts of the pauses the test rewrote."""
    found = {}
    for i in Interrupt.objects.filter(task=task_id):
        rewritten = i.interrupt_id in REWRITTEN
        found[i.interrupt_id] = {
            k: v for k, v in i.content.items() if not rewritten or k not in TIMED
        }
    return found


class _Undo(Exception):
    pass


def in_one_pass(task_id: str) -> tuple[dict, dict]:
    """The task's entry (its view version left out) and activities as one pass over every
    event of the task makes them, from no view at all; undone after."""
    found: list = []
    with contextlib.suppress(_Undo), transaction.atomic():
        task = Task.objects.get(pk=task_id)
        ViewTask.objects.filter(task=task).delete()
        Interrupt.objects.filter(task=task).delete()
        ProjectionDue.objects.create(task=task, task_version=task.version, at=task.updated_at)
        projection.project([task_id])
        entry = ViewTask.objects.get(task=task).entry
        found.append(({**entry, "version": None}, activities_of(task_id)))
        raise _Undo
    return found[0]
