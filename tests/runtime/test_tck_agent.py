"""The conformance kit's scripted agent with real workers: blocking 1.0 sends, the 0.3
'stays working' default, input-required follow-ups, and streamed scenarios."""

from __future__ import annotations

import uuid

import pytest

from tests.runtime.conftest import stream_tck

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}


def send10(rpc, message_id: str, *, task_id: str | None = None, **config) -> dict:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "tck"}]}
    if task_id:
        message["taskId"] = task_id
    params = {"message": message, "metadata": {"skill": "tck"}, "configuration": config}
    return rpc("SendMessage", params, headers=V10)


def test_blocking_send_returns_the_completed_task(runtime, rpc):
    result = send10(rpc, f"tck-complete-task-{uuid.uuid4().hex[:8]}")["result"]["task"]
    assert result["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result["status"]["message"]["parts"] == [{"text": "Hello from TCK"}]


def test_input_required_then_a_follow_up_completes_it(runtime, rpc):
    session = uuid.uuid4().hex[:8]
    task = send10(rpc, f"tck-input-required-{session}")["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    again = send10(rpc, f"tck-input-required-{session}", task_id=task["id"])["result"]["task"]
    assert again["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = send10(rpc, f"tck-complete-task-{session}", task_id=task["id"])["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["contextId"] == task["contextId"]  # inferred from the task
    history = rpc("GetTask", {"id": task["id"], "historyLength": 10}, headers=V10)["result"]
    ids = [m["messageId"] for m in history["history"] if m["role"] == "ROLE_USER"]
    # the kit repeats its first messageId: an idempotent send, answered, not appended
    assert ids == [f"tck-input-required-{session}", f"tck-complete-task-{session}"]


def test_0_3_ids_leave_the_task_working_for_follow_ups(runtime, rpc):
    params = {
        "message": {
            "role": "user",
            "messageId": f"get-test-message-id-{uuid.uuid4()}",
            "parts": [{"kind": "text", "text": "hello"}],
        },
        "metadata": {"skill": "tck"},
        "configuration": {"blocking": True},
    }
    task = rpc.result("message/send", params)
    assert task["status"]["state"] in ("submitted", "working")
    follow = {**params, "message": {**params["message"], "messageId": "f-1", "taskId": task["id"]}}
    again = rpc.result("message/send", follow)
    assert again["status"]["state"] == "working" and len(again["history"]) == 2
    assert rpc.result("tasks/cancel", {"id": task["id"]})["status"]["state"] == "canceled"


def test_streamed_scenario_in_1_0_form(runtime, rpc):
    results = stream_tck(rpc, "tck-stream-001")
    kinds = [next(iter(r)) for r in results]
    assert kinds[0] == "task" and "artifactUpdate" in kinds
    art = next(r["artifactUpdate"] for r in results if "artifactUpdate" in r)
    assert art["artifact"]["parts"] == [{"text": "Stream hello from TCK"}]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_an_agent_reply_comes_back_as_a_message(runtime, rpc):
    """A2A lets an agent answer with a Message instead of a Task: a blocking send gets it."""
    result = send10(rpc, f"tck-message-response-{uuid.uuid4().hex[:8]}")["result"]
    assert set(result) == {"message"}
    assert result["message"]["role"] == "ROLE_AGENT"
    assert result["message"]["parts"] == [{"text": "Direct message response"}]
