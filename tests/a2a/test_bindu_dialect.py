"""Bindu's pause/resume dialect over real HTTP, one or more tests per row of the table
in docs/design/bindu-dialect.md (D30, D31 and rows 1-20)."""

import uuid
from datetime import UTC, datetime

import pytest

from a2a import services
from a2a.protocol.dialects import BINDU_EXTENSION_URI
from tests.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)

BINDU_HEADER = {"X-A2A-Extensions": BINDU_EXTENSION_URI}
CHECKPOINT_KEYS = {"paused_from_state", "message_history", "artifacts", "paused_at"}

TASK_NOT_FOUND = -32001
UNSUPPORTED_OPERATION = -32004
NOT_PAUSABLE = -32040
NOT_RESUMABLE = -32041
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


# --- helpers -------------------------------------------------------------------------------


def pause(rpc, task_id, **kw):
    """tasks/pause in the Bindu dialect (chosen by `task_id`); the task it answers."""
    return rpc.result("tasks/pause", {"task_id": task_id}, **kw)


def resume(rpc, task_id, **kw):
    return rpc.result("tasks/resume", {"task_id": task_id}, **kw)


def get(rpc, task_id):
    """tasks/get in the Bindu dialect."""
    return rpc.result("tasks/get", {"task_id": task_id})


def refused(rpc, unchanged, method, params, code, **kw):
    """Call `method`, assert it fails with `code` and leaves the database as it was."""
    with unchanged():
        error = rpc.error(method, params, **kw)
    assert error["code"] == code, error
    return error


def checkpoint_of(task):
    checkpoint = task["metadata"]["checkpoint"]
    assert set(checkpoint) == CHECKPOINT_KEYS
    return checkpoint


def assert_suspended(task, task_id, paused_from):
    """`task` is the full Bindu Task of a suspended task with a checkpoint."""
    assert task["id"] == task_id
    assert task["kind"] == "task"
    assert task["status"]["state"] == "suspended"
    checkpoint = checkpoint_of(task)
    assert checkpoint["paused_from_state"] == paused_from
    return checkpoint


def assert_not_suspended(task, state):
    assert task["status"]["state"] == state
    assert "checkpoint" not in task["metadata"]


def ms_now():
    """Now, truncated to the milliseconds the wire shows."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def stamp(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def user_message(task_id=None, text="more", parts=None):
    message = {
        "role": "user",
        "messageId": str(uuid.uuid4()),
        "parts": parts or [{"kind": "text", "text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    return message


def input_response(task_id, request_id, values):
    part = {
        "kind": "data",
        "data": {"type": "a2a.input.response", "requestId": request_id, "values": values},
    }
    return user_message(task_id, parts=[part])


def open_request_id(task):
    """The requestId of the input request in a task's status message."""
    for part in task["status"]["message"]["parts"]:
        if part.get("kind") == "data" and part["data"].get("type") == "a2a.input.request":
            return part["data"]["requestId"]
    raise AssertionError(f"no input request in {task['status']}")


# --- rows 1-3: pausable states ----------------------------------------------------------------


def test_row_01_pause_working_task_suspends_it(rpc, make_task):
    task = make_task("working")
    answer = pause(rpc, task.id)
    assert_suspended(answer, task.id, "working")
    assert_suspended(get(rpc, task.id), task.id, "working")
    # The same task, seen through the RFC dialect, is really paused.
    assert rpc.result("tasks/get", {"id": task.id})["status"]["state"] == "paused-by-client"


def test_row_02_pause_submitted_task_suspends_it(rpc, make_task):
    task = make_task("submitted")
    assert_suspended(pause(rpc, task.id), task.id, "submitted")
    assert_suspended(get(rpc, task.id), task.id, "submitted")


def test_row_03_pause_input_required_task_remembers_input_required(rpc, make_task):
    task = make_task("input-required")
    assert_suspended(pause(rpc, task.id), task.id, "input-required")
    assert_suspended(get(rpc, task.id), task.id, "input-required")


# --- rows 4-7: refused pauses ------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["no-such-task", str(uuid.uuid4())])
def test_row_04_pause_unknown_task_is_not_found(rpc, make_task, unchanged, missing):
    other = make_task("working")
    refused(rpc, unchanged, "tasks/pause", {"task_id": missing}, TASK_NOT_FOUND)
    assert get(rpc, other.id)["status"]["state"] == "working"


@pytest.mark.parametrize("state", ["completed", "canceled", "failed", "rejected"])
def test_row_05_pause_terminal_task_is_not_pausable(rpc, make_task, unchanged, state):
    task = make_task(state)
    refused(rpc, unchanged, "tasks/pause", {"task_id": task.id}, NOT_PAUSABLE)
    assert_not_suspended(get(rpc, task.id), state)


def test_row_06_pause_auth_required_task_is_not_pausable(rpc, make_task, unchanged):
    task = make_task("auth-required")
    refused(rpc, unchanged, "tasks/pause", {"task_id": task.id}, NOT_PAUSABLE)
    assert_not_suspended(get(rpc, task.id), "auth-required")


def test_row_07_second_pause_is_an_error(rpc, make_task, unchanged):
    task = make_task("working")
    first = checkpoint_of(pause(rpc, task.id))
    error = refused(rpc, unchanged, "tasks/pause", {"task_id": task.id}, NOT_PAUSABLE)
    assert "suspended" in error["data"]["detail"]
    assert checkpoint_of(get(rpc, task.id)) == first


@pytest.mark.parametrize("state", ["paused-by-client", "paused-by-agent"])
def test_row_07_pause_already_suspended_task_is_an_error(rpc, make_task, unchanged, state):
    task = make_task(state)
    before = get(rpc, task.id)
    assert before["status"]["state"] == "suspended"
    refused(rpc, unchanged, "tasks/pause", {"task_id": task.id}, NOT_PAUSABLE)
    assert get(rpc, task.id) == before


# --- rows 8-10: resume ------------------------------------------------------------------------


def test_row_08_resume_answers_resumed_and_clears_checkpoint(rpc, make_task):
    task = make_task("working")
    pause(rpc, task.id)
    answer = resume(rpc, task.id)
    assert answer["id"] == task.id
    assert_not_suspended(answer, "resumed")
    assert_not_suspended(get(rpc, task.id), "working")
    assert rpc.result("tasks/get", {"id": task.id})["metadata"] == {}


def test_row_08_resume_agent_parked_task(rpc, make_task):
    task = make_task("paused-by-agent")
    assert_suspended(get(rpc, task.id), task.id, "working")
    answer = resume(rpc, task.id)
    assert answer["id"] == task.id
    assert_not_suspended(answer, "resumed")
    assert_not_suspended(get(rpc, task.id), "working")


@pytest.mark.parametrize("missing", ["no-such-task", str(uuid.uuid4())])
def test_row_09_resume_unknown_task_is_not_found(rpc, make_task, unchanged, missing):
    make_task("paused-by-client")
    refused(rpc, unchanged, "tasks/resume", {"task_id": missing}, TASK_NOT_FOUND)


NOT_SUSPENDED = ["working", "submitted", "completed", "canceled", "rejected"]
# Beyond the row's list: every other state that is not suspended (Bindu's documentation:
# "not in `suspended` state").
ALSO_NOT_SUSPENDED = ["failed", "input-required", "auth-required"]


@pytest.mark.parametrize("state", NOT_SUSPENDED + ALSO_NOT_SUSPENDED)
def test_row_10_resume_task_that_is_not_suspended_is_not_resumable(
    rpc, make_task, unchanged, state
):
    task = make_task(state)
    refused(rpc, unchanged, "tasks/resume", {"task_id": task.id}, NOT_RESUMABLE)
    assert_not_suspended(get(rpc, task.id), state)


# --- rows 11-13: the checkpoint ---------------------------------------------------------------


def test_row_11_checkpoint_holds_history_artifacts_and_time(rpc, make_task):
    task = make_task("working", text="write the report")
    rpc.result("message/send", {"message": user_message(task.id, "use the 2025 figures")})
    services.add_artifact(
        task.id, actor=AGENT, parts=[{"kind": "text", "text": "draft v1"}], name="draft"
    )
    before = ms_now()
    answer = pause(rpc, task.id)
    after = datetime.now(UTC)

    got = get(rpc, task.id)
    checkpoint = assert_suspended(got, task.id, "working")
    assert checkpoint == checkpoint_of(answer)
    texts = [m["parts"][0]["text"] for m in checkpoint["message_history"]]
    assert texts == ["write the report", "use the 2025 figures"]
    assert checkpoint["message_history"] == got["history"]
    assert [a["name"] for a in checkpoint["artifacts"]] == ["draft"]
    assert checkpoint["artifacts"][0]["parts"] == [{"kind": "text", "text": "draft v1"}]
    assert checkpoint["artifacts"] == got["artifacts"]
    assert before <= stamp(checkpoint["paused_at"]) <= after


def paused_with_history_and_artifact(rpc, make_task):
    """A task paused from working with two messages and one artifact."""
    task = make_task("working", text="first")
    rpc.result("message/send", {"message": user_message(task.id, "second")})
    services.add_artifact(task.id, actor=AGENT, parts=[{"kind": "text", "text": "x"}], name="a")
    return task.id, checkpoint_of(pause(rpc, task.id))


@pytest.mark.parametrize("history_length", [0, 1])
def test_row_11_checkpoint_is_not_cut_by_history_length(rpc, make_task, history_length):
    """historyLength trims `history`, but the checkpoint is the full history at pause time."""
    task_id, full = paused_with_history_and_artifact(rpc, make_task)
    got = rpc.result("tasks/get", {"task_id": task_id, "historyLength": history_length})
    assert len(got.get("history", [])) == history_length
    assert checkpoint_of(got) == full


def test_row_11_checkpoint_in_tasks_list_is_complete(rpc, make_task):
    task_id, full = paused_with_history_and_artifact(rpc, make_task)
    listed = rpc.result("tasks/list", {}, headers=BINDU_HEADER)["tasks"]
    (task,) = [t for t in listed if t["id"] == task_id]
    assert task["status"]["state"] == "suspended"
    assert checkpoint_of(task) == full


def test_row_12_other_metadata_survives_beside_checkpoint(rpc):
    created = rpc.result(
        "message/send", {"message": user_message(text="hi"), "metadata": {"owner": "ana"}}
    )
    task_id = created["id"]
    assert created["metadata"] == {"owner": "ana"}

    answer = pause(rpc, task_id)
    assert answer["metadata"]["owner"] == "ana"
    assert set(answer["metadata"]) == {"owner", "checkpoint"}
    assert get(rpc, task_id)["metadata"]["owner"] == "ana"

    assert resume(rpc, task_id)["metadata"] == {"owner": "ana"}
    assert get(rpc, task_id)["metadata"] == {"owner": "ana"}


def test_row_13_pause_resume_pause_replaces_checkpoint(rpc, make_task):
    task = make_task("submitted")
    first = assert_suspended(pause(rpc, task.id), task.id, "submitted")
    assert resume(rpc, task.id)["status"]["state"] == "resumed"
    rpc.result("message/send", {"message": user_message(task.id, "and another thing")})
    second = assert_suspended(pause(rpc, task.id), task.id, "working")

    assert stamp(second["paused_at"]) > stamp(first["paused_at"])
    assert len(first["message_history"]) == 1
    assert len(second["message_history"]) == 2
    assert checkpoint_of(get(rpc, task.id)) == second


# --- row 14: cancel ---------------------------------------------------------------------------


def test_row_14_cancel_suspended_task_clears_checkpoint(rpc, make_task, unchanged):
    task = make_task("working")
    pause(rpc, task.id)
    answer = rpc.result("tasks/cancel", {"task_id": task.id})
    assert_not_suspended(answer, "canceled")
    assert_not_suspended(get(rpc, task.id), "canceled")
    refused(rpc, unchanged, "tasks/resume", {"task_id": task.id}, NOT_RESUMABLE)


# --- row 15: the task id's three names, and choosing the dialect ------------------------------


@pytest.mark.parametrize(
    ("key", "headers"),
    [
        ("task_id", None),
        ("task_id", BINDU_HEADER),
        ("taskId", BINDU_HEADER),
        ("id", BINDU_HEADER),
        ("taskId", {"X-A2A-Extensions": f"https://example.com/other, {BINDU_EXTENSION_URI}"}),
    ],
)
def test_row_15_every_task_id_name_is_accepted(rpc, make_task, key, headers):
    task = make_task("working")
    paused = rpc.result("tasks/pause", {key: task.id}, headers=headers)
    assert_suspended(paused, task.id, "working")
    if headers:  # the header also makes tasks/get speak Bindu, whatever the id's name
        assert_suspended(
            rpc.result("tasks/get", {"id": task.id}, headers=headers), task.id, "working"
        )
    resumed = rpc.result("tasks/resume", {key: task.id}, headers=headers)
    assert_not_suspended(resumed, "resumed")
    assert resumed["id"] == task.id


def test_row_15_without_task_id_or_header_the_rfc_dialect_answers(rpc, make_task):
    task = make_task("working")
    first = rpc.result("tasks/pause", {"taskId": task.id})
    assert first["taskId"] == task.id
    assert first["state"] == "paused-by-client"
    assert first["handle"].startswith("suspend-")
    assert "pausedAt" in first
    assert "status" not in first
    # Idempotent in the RFC dialect, not -32040.
    second = rpc.result("tasks/pause", {"taskId": task.id})
    assert second["handle"] == first["handle"]
    got = rpc.result("tasks/get", {"id": task.id})
    assert got["status"]["state"] == "paused-by-client"
    assert "checkpoint" not in got["metadata"]
    resumed = rpc.result("tasks/resume", {"taskId": task.id})
    assert resumed["state"] == "working"
    assert resumed["previousState"] == "paused-by-client"


# --- row 16: JSON-RPC ids ---------------------------------------------------------------------


@pytest.mark.parametrize("rpc_id", ["req-123", "pause-1", 42, 0])
def test_row_16_string_and_number_ids_are_echoed(rpc, make_task, rpc_id):
    task = make_task("working")
    paused = rpc("tasks/pause", {"task_id": task.id}, id=rpc_id)
    assert paused["id"] == rpc_id and type(paused["id"]) is type(rpc_id)
    assert paused["result"]["status"]["state"] == "suspended"
    resumed = rpc("tasks/resume", {"task_id": task.id}, id=rpc_id)
    assert resumed["id"] == rpc_id and type(resumed["id"]) is type(rpc_id)
    assert resumed["result"]["status"]["state"] == "resumed"


@pytest.mark.parametrize("rpc_id", ["req-404", 404])
def test_row_16_ids_are_echoed_on_errors(rpc, unchanged, rpc_id):
    with unchanged():
        answer = rpc("tasks/pause", {"task_id": "no-such-task"}, id=rpc_id)
    assert answer["id"] == rpc_id
    assert answer["error"]["code"] == TASK_NOT_FOUND


# --- row 17: unknown method, bad params -------------------------------------------------------


@pytest.mark.parametrize("method", ["tasks/suspend", "tasks/unpause", "pause_task"])
def test_row_17_unknown_method(rpc, make_task, unchanged, method):
    task = make_task("working")
    refused(rpc, unchanged, method, {"task_id": task.id}, METHOD_NOT_FOUND)


BAD_PARAMS = {
    "task_id-number": lambda tid: {"task_id": 12345},
    "task_id-list": lambda tid: {"task_id": [tid]},
    "task_id-object": lambda tid: {"task_id": {"id": tid}},
    "task_id-null": lambda tid: {"task_id": None},
    "task_id-blank": lambda tid: {"task_id": ""},
    "no-task-id": lambda tid: {},
    "unknown-key": lambda tid: {"task_id": tid, "force": True},
    "two-names-two-tasks": lambda tid: {"task_id": tid, "taskId": "another-task"},
    "params-a-list": lambda tid: [tid],
}


@pytest.mark.parametrize(
    ("method", "state"), [("tasks/pause", "working"), ("tasks/resume", "paused-by-client")]
)
@pytest.mark.parametrize("make_params", BAD_PARAMS.values(), ids=BAD_PARAMS.keys())
def test_row_17_bad_params(rpc, make_task, unchanged, method, state, make_params):
    task = make_task(state)  # a good call would succeed, so only the params can be at fault
    error = refused(
        rpc, unchanged, method, make_params(task.id), INVALID_PARAMS, headers=BINDU_HEADER
    )
    assert error["data"]["detail"]


# --- rows 18-19: a resumed task goes on -------------------------------------------------------


def test_row_18_resumed_task_can_run_to_completion(rpc, make_task):
    task = make_task("working")
    pause(rpc, task.id)
    resume(rpc, task.id)
    services.complete_task(task.id, actor=AGENT, text="all done")
    got = get(rpc, task.id)
    assert_not_suspended(got, "completed")
    assert got["status"]["message"]["parts"] == [{"kind": "text", "text": "all done"}]


def test_row_19_input_required_task_resumes_to_input_required_and_is_answerable(rpc, make_task):
    task = make_task("input-required")
    request_id = open_request_id(get(rpc, task.id))
    pause(rpc, task.id)
    assert resume(rpc, task.id)["status"]["state"] == "resumed"

    got = get(rpc, task.id)
    assert_not_suspended(got, "input-required")
    assert open_request_id(got) == request_id

    answered = rpc.result(
        "message/send",
        {"message": input_response(task.id, request_id, {"decision": "approve"})},
    )
    assert answered["status"]["state"] == "working"
    assert get(rpc, task.id)["status"]["state"] == "working"


# --- row 20: no message to a suspended task ---------------------------------------------------


@pytest.mark.parametrize("state", ["working", "input-required"])
def test_row_20_message_to_suspended_task_is_refused(rpc, make_task, unchanged, state):
    task = make_task(state)
    request_id = open_request_id(get(rpc, task.id)) if state == "input-required" else None
    pause(rpc, task.id)
    before = get(rpc, task.id)
    if request_id:
        message = input_response(task.id, request_id, {"decision": "approve"})
    else:
        message = user_message(task.id, "are you there?")

    error = refused(rpc, unchanged, "message/send", {"message": message}, UNSUPPORTED_OPERATION)
    assert "resume" in error["data"]["detail"]
    assert get(rpc, task.id) == before
