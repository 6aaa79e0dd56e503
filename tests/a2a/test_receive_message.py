"""`services.receive_message`: where a user message goes depends only on the task it is
for — a new task, an answer to a waiting task, a message appended to a running one, or a
refusal that changes nothing."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from a2a import services
from a2a.errors import NotAllowedNow, TaskNotFound, ValidationFailed
from a2a.models import Task
from tests.conftest import AGENT, CLIENT, task_maker, user_message

# Each test runs in a transaction rolled back at its end (no flush): the services' own
# atomic blocks nest as savepoints, and nothing here needs a commit (no other process).
pytestmark = pytest.mark.django_db


@pytest.fixture
def make_task(db):
    return task_maker()


TERMINAL = ["completed", "failed", "canceled", "rejected"]
PAUSED = ["paused-by-client", "paused-by-agent"]
ONE_APPROVAL = {"fields": [{"name": "decision", "type": "approval", "required": True}]}
TWO_FIELDS = {
    "fields": [
        {"name": "decision", "type": "approval", "required": True},
        {"name": "note", "type": "text"},
    ]
}


def receive(message=None, **kw) -> services.Delivered:
    return services.receive_message(message or user_message("more"), actor=CLIENT, **kw)


def waiting_on(make_task, request: dict) -> Task:
    task = make_task("working")
    services.request_input(task.id, actor=AGENT, explanation="Ship it?", request=request)
    return Task.objects.get(pk=task.id)


def last_event(task: Task):
    return task.events.order_by("id").last()


# --- no task: a new one ----------------------------------------------------------------------


def test_no_task_starts_a_new_task_of_the_default_skill():
    delivered = receive(
        user_message("Roll out 2.14"),
        context_id="ctx-1",
        metadata={"build": 7},
        origin=services.Origin("agui", ref="thread-1"),
    )
    task = Task.objects.get(pk=delivered.task.id)
    assert (delivered.created, delivered.answered) == (True, False)
    assert (task.state, task.context_id, task.skill) == (
        "submitted",
        "ctx-1",
        settings.TASKDECK["DEFAULT_SKILL"],
    )
    assert (task.metadata, task.origin, task.origin_ref) == ({"build": 7}, "agui", "thread-1")
    assert task.messages.get().parts == [{"kind": "text", "text": "Roll out 2.14"}]


def test_no_task_with_a_skill_uses_it():
    delivered = receive(skill="batch")
    assert Task.objects.get(pk=delivered.task.id).skill == "batch"


@pytest.mark.parametrize(
    ("kw", "path"),
    [
        pytest.param({"skill": "no-such-skill"}, "skill", id="unknown-skill"),
        pytest.param({"metadata": {"x": "\x00"}}, "metadata.x", id="unstorable-metadata"),
        pytest.param(
            {"message": user_message("\x00")}, "message.parts.0.text", id="unstorable-text"
        ),
        pytest.param(
            {"message": user_message(reference_task_ids=["gone"])},
            "message.referenceTaskIds",
            id="unknown-reference",
        ),
    ],
)
def test_no_task_refusals_create_nothing(make_task, unchanged, kw, path):
    make_task()
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(**kw)
    assert list(err.value.errors) == [path]


# --- submitted / working: appended -----------------------------------------------------------


@pytest.mark.parametrize("after_end", ["refuse", "new_task"])
@pytest.mark.parametrize("state", ["submitted", "working"])
def test_message_to_a_running_task_is_appended(make_task, state, after_end):
    task = make_task(state)
    message = user_message("also check the logs")
    delivered = receive(message, task_id=task.id, context_id=task.context_id, after_end=after_end)
    assert (delivered.created, delivered.answered) == (False, False)
    assert delivered.task.id == task.id
    fresh = Task.objects.get(pk=task.id)
    assert fresh.state == state and fresh.version == task.version + 1
    newest = fresh.messages.order_by("seq").last()
    assert (newest.message_id, newest.role) == (message.message_id, "user")
    event = last_event(fresh)
    assert event.kind == "message_added" and event.data["role"] == "user"
    assert Task.objects.count() == 1


def test_an_answer_to_a_task_that_asked_nothing_is_refused(make_task, unchanged):
    task = make_task("working")
    answer = services.IncomingMessage(
        message_id="a-1",
        parts=[{"kind": "data", "data": {"type": "a2a.input.response", "requestId": "r"}}],
    )
    with unchanged(), pytest.raises(NotAllowedNow):
        receive(answer, task_id=task.id)


# --- input-required / auth-required: the answer ---------------------------------------------


def test_data_answer_to_a_waiting_task_is_taken(make_task):
    task = waiting_on(make_task, TWO_FIELDS)
    request_id = task.input_request["requestId"]
    answer = services.IncomingMessage(
        message_id="a-1",
        parts=[
            {
                "kind": "data",
                "data": {
                    "type": "a2a.input.response",
                    "requestId": request_id,
                    "values": {"decision": "reject", "note": "not today"},
                },
            }
        ],
    )
    delivered = receive(answer, task_id=task.id)
    assert (delivered.created, delivered.answered) == (False, True)
    fresh = Task.objects.get(pk=task.id)
    assert fresh.state == "working" and fresh.input_request is None
    provided = last_event(fresh)
    assert provided.kind == "input_provided" and provided.data["decision"] == "rejected"
    assert provided.data["values"] == {
        "decision": {"decision": "reject", "comment": ""},
        "note": "not today",
    }


def test_text_answer_fills_the_one_field_of_the_request(make_task):
    task = waiting_on(make_task, ONE_APPROVAL)
    delivered = receive(user_message("approve: ship it"), task_id=task.id)
    assert (delivered.created, delivered.answered) == (False, True)
    fresh = Task.objects.get(pk=task.id)
    assert fresh.state == "working" and fresh.input_request is None
    provided = fresh.events.get(kind="input_provided")
    assert provided.data["values"] == {"decision": {"decision": "approve", "comment": "ship it"}}
    assert provided.data["decision"] == "approved"
    assert provided.data["requestId"] == task.input_request["requestId"]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        pytest.param("approve: ship it", "message.parts", id="text-for-two-fields"),
        pytest.param("maybe", "message.parts", id="a-bare-word"),
    ],
)
def test_text_answer_to_a_request_of_several_fields_is_refused(make_task, unchanged, text, path):
    task = waiting_on(make_task, TWO_FIELDS)
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(user_message(text), task_id=task.id)
    assert list(err.value.errors) == [path]
    fresh = Task.objects.get(pk=task.id)
    assert fresh.state == "input-required" and fresh.input_request == task.input_request


def test_bad_text_answer_to_a_one_field_request_is_refused(make_task, unchanged):
    task = waiting_on(make_task, ONE_APPROVAL)
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(user_message("perhaps later"), task_id=task.id)
    assert list(err.value.errors) == ["message.parts.values.decision"]
    assert Task.objects.get(pk=task.id).state == "input-required"


def test_json_object_text_fills_several_fields(make_task):
    task = waiting_on(make_task, TWO_FIELDS)
    text = json.dumps({"decision": "approve", "note": "after the freeze"})
    delivered = receive(user_message(text), task_id=task.id)
    assert delivered.answered
    provided = Task.objects.get(pk=task.id).events.get(kind="input_provided")
    assert provided.data["values"] == {
        "decision": {"decision": "approve", "comment": ""},
        "note": "after the freeze",
    }


def test_text_answer_to_an_auth_request_without_fields_is_taken(make_task):
    task = make_task("auth-required")
    delivered = receive(user_message("signed in"), task_id=task.id, after_end="new_task")
    assert (delivered.created, delivered.answered) == (False, True)
    assert Task.objects.get(pk=task.id).state == "working"
    assert Task.objects.count() == 1


# --- paused / finished: refused (or a new task in the context) -------------------------------


@pytest.mark.parametrize("after_end", ["refuse", "new_task"])
@pytest.mark.parametrize("state", PAUSED)
def test_message_to_a_paused_task_is_refused(make_task, unchanged, state, after_end):
    task = make_task(state)
    with unchanged(), pytest.raises(NotAllowedNow) as err:
        receive(task_id=task.id, after_end=after_end)
    assert err.value.state == state and "resume" in str(err.value)


@pytest.mark.parametrize("state", TERMINAL)
def test_message_to_a_finished_task_is_refused(make_task, unchanged, state):
    task = make_task(state)
    with unchanged(), pytest.raises(NotAllowedNow) as err:
        receive(task_id=task.id)
    assert err.value.state == state and "referenceTaskIds" in str(err.value)


@pytest.mark.parametrize("state", TERMINAL)
def test_after_end_new_task_starts_a_task_in_the_same_context(make_task, state):
    old = make_task(state)
    old_events = old.events.count()
    message = user_message("and now the next one")
    delivered = receive(message, task_id=old.id, after_end="new_task")
    assert (delivered.created, delivered.answered) == (True, False)
    new = Task.objects.get(pk=delivered.task.id)
    assert new.id != old.id
    assert (new.context_id, new.skill, new.state) == (old.context_id, old.skill, "submitted")
    assert new.messages.get().message_id == message.message_id
    still = Task.objects.get(pk=old.id)
    assert (still.state, still.version) == (state, old.version)
    assert still.events.count() == old_events


def test_after_end_new_task_takes_a_given_skill(make_task):
    old = make_task("completed")
    delivered = receive(task_id=old.id, after_end="new_task", skill="ci-wait")
    assert Task.objects.get(pk=delivered.task.id).skill == "ci-wait"


@pytest.mark.parametrize(
    ("kw", "path"),
    [
        pytest.param({"skill": "no-such-skill"}, "skill", id="unknown-skill"),
        pytest.param({"message": user_message("\x00")}, "message.parts.0.text", id="bad-text"),
        pytest.param({"context_id": "other"}, "message.contextId", id="other-context"),
    ],
)
def test_after_end_new_task_refusals_create_nothing(make_task, unchanged, kw, path):
    old = make_task("completed")
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(task_id=old.id, after_end="new_task", **kw)
    assert list(err.value.errors) == [path]


# --- the task named must exist and match the context ----------------------------------------


@pytest.mark.parametrize("state", ["working", "input-required", "completed"])
def test_context_mismatch_is_refused(make_task, unchanged, state):
    task = make_task(state)
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(task_id=task.id, context_id="some-other-context")
    assert list(err.value.errors) == ["message.contextId"]


def test_unknown_task_is_not_found(make_task, unchanged):
    make_task()
    with unchanged(), pytest.raises(TaskNotFound):
        receive(task_id="no-such-task")


@pytest.mark.parametrize("state", ["working", "input-required"])
def test_bad_message_to_an_existing_task_is_refused(make_task, unchanged, state):
    task = make_task(state)
    bad = services.IncomingMessage(message_id="", parts=[{"kind": "text", "text": "hi"}])
    with unchanged(), pytest.raises(ValidationFailed) as err:
        receive(bad, task_id=task.id)
    assert list(err.value.errors) == ["message.messageId"]
