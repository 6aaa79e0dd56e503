"""The JSON-RPC methods over real HTTP, in the RFC pause dialect (docs/design/task-states.md,
a2a-surface.md, input-requests.md).

These tests never send `task_id`: that name selects the Bindu dialect, which has its own tests.
Every error case runs inside `unchanged()`; where possible its task is in a state in which a
lenient server would have acted, so a missing check shows up as a changed database.
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from a2a import api_keys
from a2a.models import Suspension, Task
from tests.conftest import APPROVAL_REQUEST

pytestmark = pytest.mark.django_db(transaction=True)

PAUSED = ["paused-by-client", "paused-by-agent"]
ACTIVE = ["submitted", "working", "input-required", "auth-required", *PAUSED]
TERMINAL = ["completed", "failed", "canceled", "rejected"]
ALL_STATES = [*ACTIVE, *TERMINAL]
TASK_METHODS = [
    "tasks/get",
    "tasks/cancel",
    "tasks/pause",
    "tasks/resume",
    "tasks/await_resumption",
]
ID_KEYS = ["taskId", "id"]  # the RFC dialect's names for the task; `task_id` would pick Bindu's

HANDLE = re.compile(r"suspend-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TASK_KEYS = {"kind", "id", "contextId", "status", "artifacts", "metadata", "history"}
MESSAGE_KEYS = {"kind", "messageId", "role", "parts", "taskId", "contextId"}
MESSAGE_OPTIONAL = {"metadata", "referenceTaskIds"}
LIST_KEYS = {"tasks", "nextPageToken", "pageSize", "totalSize"}
PAUSE_KEYS = {"taskId", "state", "handle", "pausedAt", "reason"}
PARK_KEYS = {"taskId", "state", "handle", "pausedAt"}
RESUME_KEYS = {
    "taskId",
    "state",
    "previousState",
    "cause",
    "hadResumeInput",
    "continueTranscript",
    "resumedAt",
}


# --- helpers -------------------------------------------------------------------------------


def when(stamp: Any) -> datetime:
    """A wire timestamp: ISO 8601 in UTC with a Z."""
    assert isinstance(stamp, str) and stamp.endswith("Z"), stamp
    return datetime.fromisoformat(stamp[:-1] + "+00:00")


def assert_recent(stamp: Any) -> None:
    assert abs(datetime.now(UTC) - when(stamp)) < timedelta(minutes=2), stamp


def user_msg(text: str = "hello", **extra: Any) -> dict:
    """A client message in A2A 0.3 form; `extra` adds or replaces keys (taskId, parts…)."""
    return {
        "role": "user",
        "messageId": f"m-{uuid.uuid4()}",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def assert_message(m: dict, task: dict) -> None:
    assert MESSAGE_KEYS <= set(m) <= MESSAGE_KEYS | MESSAGE_OPTIONAL, m
    assert m["kind"] == "message"
    assert m["role"] in ("user", "agent")
    assert m["taskId"] == task["id"]
    assert m["contextId"] == task["contextId"]


def assert_task(task: dict, state: str, *, history: bool = True) -> None:
    """A Task in A2A 0.3 form in `state`; `history=False` lets the history be left out."""
    required = TASK_KEYS if history else TASK_KEYS - {"history"}
    assert required <= set(task) <= TASK_KEYS, task
    assert task["kind"] == "task"
    assert isinstance(task["id"], str) and task["id"]
    assert isinstance(task["contextId"], str) and task["contextId"]
    assert {"state", "timestamp"} <= set(task["status"]) <= {"state", "timestamp", "message"}
    assert task["status"]["state"] == state
    when(task["status"]["timestamp"])
    if "message" in task["status"]:
        assert_message(task["status"]["message"], task)
    assert isinstance(task["artifacts"], list)
    assert isinstance(task["metadata"], dict)
    for m in task.get("history", []):
        assert_message(m, task)


def assert_error(err: dict, code: int, field: str | tuple[str, ...] | None = None) -> None:
    """`code`, a human sentence in data.detail, no traceback, and (if given) `field` named in
    data.errors (a tuple: any one of these paths)."""
    assert err["code"] == code, err
    assert isinstance(err["message"], str) and err["message"]
    detail = err["data"]["detail"]
    assert isinstance(detail, str) and len(detail.split()) >= 2, detail
    text = json.dumps(err)
    assert "Traceback" not in text and 'File "' not in text, text
    if field is not None:
        wanted = (field,) if isinstance(field, str) else field
        paths = err["data"].get("errors") or {}
        assert any(p in paths for p in wanted), (wanted, paths)


def call_error(rpc, unchanged, method: str, params: Any, code: int, field=None) -> dict:
    """Call, expect error `code`, and check the database did not change."""
    with unchanged():
        err = rpc.error(method, params)
    assert_error(err, code, field)
    return err


def get(rpc, task_id: str, **params: Any) -> dict:
    return rpc.result("tasks/get", {"id": task_id, **params})


def state_of(rpc, task_id: str) -> str:
    return get(rpc, task_id)["status"]["state"]


def pause_of(rpc, task_id: str) -> dict | None:
    """The open suspension as tasks/get shows it (metadata.pause)."""
    return get(rpc, task_id)["metadata"].get("pause")


def task_params(method: str, task_id: str, key: str | None = None) -> dict:
    """Minimal valid params of `method` for `task_id`, named the RFC dialect's way."""
    if method == "message/send":
        return {"message": user_msg(taskId=task_id)}
    if method == "tasks/list":
        return {}
    if method == "tasks/await_resumption":
        return {key or "taskId": task_id, "reason": "waiting on ci/build:1234"}
    if method in ("tasks/pause", "tasks/resume"):
        return {key or "taskId": task_id}
    return {key or "id": task_id}


def ready_state(method: str) -> str:
    """A state from which `method` would succeed."""
    return "paused-by-client" if method == "tasks/resume" else "working"


def open_request(rpc, task_id: str) -> dict:
    """The a2a.input.request DataPart of an input-required task's status message."""
    status = get(rpc, task_id)["status"]
    assert status["state"] == "input-required"
    found = [
        p["data"]
        for p in status["message"]["parts"]
        if p["kind"] == "data" and p["data"].get("type") == "a2a.input.request"
    ]
    assert len(found) == 1, status
    return found[0]


def answer(task_id: str, request_id: str, values: Any) -> dict:
    """message/send params answering an input request."""
    data = {"type": "a2a.input.response", "requestId": request_id, "values": values}
    return {"message": user_msg(taskId=task_id, parts=[{"kind": "data", "data": data}])}


def envelope(method: str, params: Any, rpc_id: Any = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.fixture
def key_with(transactional_db):
    """key_with("read", ...) -> (name, token) of a new API key with those scopes."""

    def make(*scopes: str) -> tuple[str, str]:
        name = f"key-{uuid.uuid4().hex[:12]}"
        return name, api_keys.create_key(name, list(scopes), owner="test-client")[1]

    return make


# --- message/send --------------------------------------------------------------------------


def test_send_creates_a_submitted_task(rpc):
    msg = user_msg("plan my week", metadata={"source": "test"})
    task = rpc.result("message/send", {"message": msg})
    assert_task(task, "submitted")
    assert [
        {k: m[k] for k in ("messageId", "role", "parts", "metadata")} for m in task["history"]
    ] == [
        {
            "messageId": msg["messageId"],
            "role": "user",
            "parts": msg["parts"],
            "metadata": {"source": "test"},
        }
    ]
    assert get(rpc, task["id"]) == task
    other = rpc.result("message/send", {"message": user_msg("something else")})
    assert other["id"] != task["id"]
    assert other["contextId"] != task["contextId"]


@pytest.mark.parametrize("state", ["submitted", "working"])
def test_send_follow_up_appends_to_history(rpc, make_task, state):
    task = make_task(state)
    before = get(rpc, task.id)
    msg = user_msg("one more thing", taskId=task.id)
    after = rpc.result("message/send", {"message": msg})
    assert_task(after, state)
    assert (after["id"], after["contextId"]) == (task.id, task.context_id)
    assert after["history"][:-1] == before["history"]
    assert after["history"][-1]["messageId"] == msg["messageId"]
    assert after["history"][-1]["parts"] == msg["parts"]
    assert get(rpc, task.id)["history"] == after["history"]


def test_send_with_a_context_id_starts_a_task_in_that_context(rpc):
    first = rpc.result("message/send", {"message": user_msg("one", contextId="ctx-client")})
    assert first["contextId"] == "ctx-client"
    second = rpc.result("message/send", {"message": user_msg("two", contextId="ctx-client")})
    assert_task(second, "submitted")
    assert second["id"] != first["id"]
    assert second["contextId"] == "ctx-client"
    listed = rpc.result("tasks/list", {"contextId": "ctx-client"})
    assert {t["id"] for t in listed["tasks"]} == {first["id"], second["id"]}


@pytest.mark.parametrize("length", [0, 1, 2, 10])
def test_send_configuration_history_length(rpc, make_task, length):
    task = make_task("working", text="first")
    rpc.result("message/send", {"message": user_msg("second", taskId=task.id)})
    last = user_msg("third", taskId=task.id)
    out = rpc.result("message/send", {"message": last, "configuration": {"historyLength": length}})
    assert_task(out, "working", history=False)
    full = get(rpc, task.id)["history"]
    assert [m["parts"][0]["text"] for m in full] == ["first", "second", "third"]
    assert out.get("history", []) == full[max(len(full) - length, 0) :]


def test_send_with_a_known_skill(rpc):
    task = rpc.result("message/send", {"message": user_msg(), "metadata": {"skill": "approval"}})
    assert_task(task, "submitted")


@pytest.mark.parametrize("path", ["metadata.skill", "message.metadata.skill"])
def test_send_with_an_unknown_skill(rpc, unchanged, path):
    msg = user_msg()
    params: dict[str, Any] = {"message": msg}
    target = params if path == "metadata.skill" else msg
    target["metadata"] = {"skill": "astrology"}
    call_error(rpc, unchanged, "message/send", params, -32602, path)


def test_send_referencing_a_known_task(rpc, make_task):
    done = make_task("completed")
    task = rpc.result("message/send", {"message": user_msg("again", referenceTaskIds=[done.id])})
    assert_task(task, "submitted")
    assert task["id"] != done.id
    assert task["history"][0]["referenceTaskIds"] == [done.id]


def test_send_referencing_an_unknown_task(rpc, unchanged, make_task):
    done = make_task("completed")
    params = {"message": user_msg(referenceTaskIds=[done.id, "no-such-task"])}
    call_error(rpc, unchanged, "message/send", params, -32602, "message.referenceTaskIds")


def test_send_with_a_context_id_that_is_not_the_tasks(rpc, unchanged, make_task):
    task = make_task("working", context_id="ctx-a")
    params = {"message": user_msg(taskId=task.id, contextId="ctx-b")}
    call_error(rpc, unchanged, "message/send", params, -32602, "message.contextId")


# --- tasks/get -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "length, texts",
    [(0, []), (1, ["three"]), (2, ["two", "three"]), (None, ["one", "two", "three"])],
)
def test_get_history_length(rpc, make_task, length, texts):
    task = make_task("working", text="one")
    for text in ("two", "three"):
        rpc.result("message/send", {"message": user_msg(text, taskId=task.id)})
    got = get(rpc, task.id) if length is None else get(rpc, task.id, historyLength=length)
    assert_task(got, "working", history=length != 0)
    assert got["id"] == task.id
    assert [m["parts"][0]["text"] for m in got.get("history", [])] == texts


# --- tasks/list ----------------------------------------------------------------------------


def listed_ids(page: dict) -> list[str]:
    return [t["id"] for t in page["tasks"]]


@pytest.mark.parametrize("state", ["working", "paused-by-client", "completed"])
def test_list_filters_by_state(rpc, make_task, state):
    wanted = {make_task(state).id, make_task(state).id}
    for other in ("submitted", "working", "paused-by-client", "completed"):
        if other != state:
            make_task(other)
    page = rpc.result("tasks/list", {"state": state})
    assert set(page) == LIST_KEYS
    assert set(listed_ids(page)) == wanted
    assert page["totalSize"] == 2
    assert not page["nextPageToken"]
    for t in page["tasks"]:
        assert_task(t, state, history=False)


def test_list_filters_by_context(rpc, make_task):
    working = make_task("working", context_id="ctx-mine").id
    done = make_task("completed", context_id="ctx-mine").id
    make_task("working", context_id="ctx-other")
    page = rpc.result("tasks/list", {"contextId": "ctx-mine"})
    assert set(listed_ids(page)) == {working, done}
    assert page["totalSize"] == 2
    both = rpc.result("tasks/list", {"contextId": "ctx-mine", "state": "working"})
    assert listed_ids(both) == [working]
    assert both["totalSize"] == 1
    assert rpc.result("tasks/list", {"contextId": "ctx-none"})["tasks"] == []


@pytest.mark.parametrize("page_size", [1, 3, 7, 10])
def test_list_pages_cover_every_task_once(rpc, make_task, page_size):
    created = {make_task(s, context_id="ctx-pages").id for s in ["working"] * 5 + TERMINAL[:2]}
    make_task("working", context_id="ctx-elsewhere")
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        params: dict[str, Any] = {"contextId": "ctx-pages", "pageSize": page_size}
        if token:
            params["pageToken"] = token
        page = rpc.result("tasks/list", params)
        pages += 1
        assert (page["totalSize"], page["pageSize"]) == (7, page_size)
        seen += listed_ids(page)
        token = page["nextPageToken"]
        if not token:
            break
        assert len(page["tasks"]) == page_size  # only the last page may be short
        assert pages < 7, "more pages than tasks"
    assert len(seen) == len(set(seen)), "a task came back twice"
    assert set(seen) == created
    assert pages == math.ceil(7 / page_size)


@pytest.mark.parametrize(
    "token",
    ["not a token", "bm9wZQ", b64('["yesterday", "x"]'), b64("[1, 2, 3]"), b64('{"a": 1}')],
)
def test_list_with_a_bad_page_token(rpc, unchanged, make_task, token):
    make_task("working")
    call_error(rpc, unchanged, "tasks/list", {"pageToken": token}, -32602, "pageToken")


# --- tasks/cancel --------------------------------------------------------------------------


@pytest.mark.parametrize("state", ACTIVE)
def test_cancel_an_active_task(rpc, unchanged, make_task, state):
    task = make_task(state)
    pause = pause_of(rpc, task.id)
    assert (pause is not None) == (state in PAUSED)
    out = rpc.result("tasks/cancel", {"id": task.id})
    assert_task(out, "canceled")
    assert out["id"] == task.id
    assert "pause" not in out["metadata"]
    assert get(rpc, task.id) == out
    if pause is not None:  # the suspension ended with the task: its handle resumes nothing
        call_error(
            rpc, unchanged, "tasks/resume", {"taskId": task.id, "handle": pause["handle"]}, -32013
        )


# --- tasks/pause ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", ID_KEYS)
@pytest.mark.parametrize("state", ["submitted", "working"])
def test_pause(rpc, make_task, key, state):
    task = make_task(state)
    out = rpc.result("tasks/pause", {key: task.id, "reason": "operator review"})
    assert set(out) == PAUSE_KEYS
    assert out["taskId"] == task.id
    assert out["state"] == "paused-by-client"
    assert HANDLE.fullmatch(out["handle"]), out
    assert out["reason"] == "operator review"
    assert_recent(out["pausedAt"])
    got = get(rpc, task.id)
    assert got["status"]["state"] == "paused-by-client"
    pause = got["metadata"]["pause"]
    assert (pause["handle"], pause["initiator"], pause["reason"], pause["pausedAt"]) == (
        out["handle"],
        "client",
        "operator review",
        out["pausedAt"],
    )


def test_pause_again_returns_the_same_handle(rpc, make_task):
    task = make_task("working")
    first = rpc.result("tasks/pause", {"taskId": task.id, "reason": "review"})
    again = rpc.result("tasks/pause", {"taskId": task.id, "reason": "review"})
    assert again == first
    assert Suspension.objects.filter(task_id=task.id).count() == 1
    assert pause_of(rpc, task.id)["handle"] == first["handle"]


def test_pause_of_an_agent_parked_task_becomes_a_client_hold(rpc, unchanged, make_task):
    task = make_task("working")
    parked = rpc.result(
        "tasks/await_resumption",
        {"taskId": task.id, "reason": "waiting on ci", "conditions": {"onEvent": "ci.done"}},
    )
    held = rpc.result("tasks/pause", {"taskId": task.id, "reason": "operator hold"})
    assert set(held) == PAUSE_KEYS
    assert held["state"] == "paused-by-client"
    assert HANDLE.fullmatch(held["handle"]) and held["handle"] != parked["handle"]
    pause = pause_of(rpc, task.id)
    assert (pause["handle"], pause["initiator"]) == (held["handle"], "client")
    params = {"taskId": task.id, "handle": parked["handle"]}
    call_error(rpc, unchanged, "tasks/resume", params, -32012)
    resumed = rpc.result("tasks/resume", {"taskId": task.id, "handle": held["handle"]})
    assert (resumed["state"], resumed["previousState"]) == ("working", "paused-by-client")


@pytest.mark.parametrize(
    "mode", ["finish_step", "interrupt_immediate", "wait_for_completion", None]
)
def test_pause_modes(rpc, make_task, mode):
    task = make_task("working")
    params = {"taskId": task.id} if mode is None else {"taskId": task.id, "mode": mode}
    out = rpc.result("tasks/pause", params)
    assert out["state"] == "paused-by-client"
    assert pause_of(rpc, task.id)["mode"] == (mode or "finish_step")


def test_pause_with_a_timeout_has_a_deadline(rpc, make_task):
    task = make_task("working")
    resume_when = {"timeout": {"durationMinutes": 30, "onTimeout": "resume_with_summary"}}
    out = rpc.result("tasks/pause", {"taskId": task.id, "resumeWhen": resume_when})
    assert set(out) >= PAUSE_KEYS
    assert out["state"] == "paused-by-client"
    assert when(out["deadline"]) - when(out["pausedAt"]) == timedelta(minutes=30)
    pause = pause_of(rpc, task.id)
    assert (pause["deadline"], pause["onTimeout"]) == (out["deadline"], "resume_with_summary")


def test_pause_accepts_both_names_for_the_same_task(rpc, make_task):
    task = make_task("working")
    out = rpc.result("tasks/pause", {"id": task.id, "taskId": task.id})
    assert (out["taskId"], out["state"]) == (task.id, "paused-by-client")


# --- tasks/await_resumption ----------------------------------------------------------------


@pytest.mark.parametrize("key", ID_KEYS)
def test_await_resumption_parks_a_working_task(rpc, make_task, key):
    task = make_task("working")
    out = rpc.result("tasks/await_resumption", {key: task.id, "reason": "waiting on ci/build:1234"})
    assert set(out) == PARK_KEYS
    assert (out["taskId"], out["state"]) == (task.id, "paused-by-agent")
    assert HANDLE.fullmatch(out["handle"]), out
    assert_recent(out["pausedAt"])
    pause = pause_of(rpc, task.id)
    assert (pause["handle"], pause["initiator"], pause["reason"]) == (
        out["handle"],
        "agent",
        "waiting on ci/build:1234",
    )
    assert state_of(rpc, task.id) == "paused-by-agent"


@pytest.mark.parametrize(
    "conditions, minutes",
    [
        ({"onEvent": "ci.build.completed:1234"}, None),
        ({"trigger": {"event": "deploy.finished", "match": {"env": "prod"}}}, None),
        (
            {
                "onEvent": "ci.build.completed:1234",
                "timeout": {"durationMinutes": 30, "onTimeout": "fail"},
            },
            30,
        ),
    ],
)
def test_await_resumption_echoes_conditions(rpc, make_task, conditions, minutes):
    task = make_task("working")
    params = {
        "taskId": task.id,
        "reason": "waiting on ci/build:1234",
        "conditions": conditions,
        "summary": "Paused on CI build 1234; ETA 3m.",
        "metadata": {},
    }
    out = rpc.result("tasks/await_resumption", params)
    assert set(out) >= PARK_KEYS
    assert out["state"] == "paused-by-agent"
    assert out["conditions"] == conditions
    if minutes is None:
        assert "deadline" not in out
    else:
        assert when(out["deadline"]) - when(out["pausedAt"]) == timedelta(minutes=minutes)
    pause = pause_of(rpc, task.id)
    assert pause["conditions"] == conditions
    assert pause["summary"] == "Paused on CI build 1234; ETA 3m."


# --- tasks/resume --------------------------------------------------------------------------


@pytest.mark.parametrize("key", ID_KEYS)
@pytest.mark.parametrize("state", PAUSED)
def test_resume(rpc, make_task, key, state):
    task = make_task(state)
    paused_at = pause_of(rpc, task.id)["pausedAt"]
    out = rpc.result("tasks/resume", {key: task.id})
    assert set(out) == RESUME_KEYS
    assert {k: v for k, v in out.items() if k != "resumedAt"} == {
        "taskId": task.id,
        "state": "working",
        "previousState": state,
        "cause": "explicit_resume",
        "hadResumeInput": False,
        "continueTranscript": True,
    }
    assert when(out["resumedAt"]) >= when(paused_at)
    assert_recent(out["resumedAt"])
    got = get(rpc, task.id)
    assert got["status"]["state"] == "working"
    assert "pause" not in got["metadata"]


@pytest.mark.parametrize(
    "resume_input, had_input", [(None, False), ("go ahead", True), ({"approved": True}, True)]
)
def test_resume_with_the_handle_and_input(rpc, make_task, resume_input, had_input):
    task = make_task("working")
    handle = rpc.result("tasks/pause", {"taskId": task.id})["handle"]
    params = {"taskId": task.id, "handle": handle, "input": resume_input}
    out = rpc.result("tasks/resume", params)
    assert (out["state"], out["previousState"]) == ("working", "paused-by-client")
    assert out["hadResumeInput"] is had_input
    suspension = Suspension.objects.get(handle=handle)
    assert suspension.had_resume_input is had_input
    assert suspension.resume_input == resume_input


@pytest.mark.parametrize("continue_transcript", [True, False])
def test_resume_records_continue_transcript(rpc, make_task, continue_transcript):
    task = make_task("paused-by-agent")
    handle = pause_of(rpc, task.id)["handle"]
    params = {"taskId": task.id, "handle": handle, "continueTranscript": continue_transcript}
    out = rpc.result("tasks/resume", params)
    assert out["continueTranscript"] is continue_transcript
    assert Suspension.objects.get(handle=handle).continue_transcript is continue_transcript


# --- input requests (docs/design/input-requests.md) ----------------------------------------


def test_input_request_is_shown_in_the_status_message(rpc, make_task):
    task = make_task("input-required")
    got = get(rpc, task.id)
    assert_task(got, "input-required")
    message = got["status"]["message"]
    assert message["role"] == "agent"
    assert [p["text"] for p in message["parts"] if p["kind"] == "text"] == ["Please approve"]
    request = open_request(rpc, task.id)
    assert isinstance(request["requestId"], str) and request["requestId"]
    assert request["requestId"] == Task.objects.get(pk=task.id).input_request["requestId"]
    assert request["title"] == APPROVAL_REQUEST["title"]
    assert [(f["name"], f["type"]) for f in request["fields"]] == [
        (f["name"], f["type"]) for f in APPROVAL_REQUEST["fields"]
    ]


@pytest.mark.parametrize(
    "values",
    [
        {"decision": "approve"},
        {"decision": "reject", "note": "not this week"},
        {"decision": {"decision": "approve", "comment": "fine"}},
    ],
)
def test_valid_answer_puts_the_task_back_to_work(rpc, make_task, values):
    task = make_task("input-required")
    params = answer(task.id, open_request(rpc, task.id)["requestId"], values)
    out = rpc.result("message/send", params)
    assert_task(out, "working")
    assert out["id"] == task.id
    assert out["history"][-1]["messageId"] == params["message"]["messageId"]
    assert out["history"][-1]["parts"] == params["message"]["parts"]
    assert state_of(rpc, task.id) == "working"


def _bad_answer(request_id: str, task_id: str, case: str) -> dict:
    if case == "text only":
        return {"message": user_msg("yes, go ahead", taskId=task_id)}
    if case == "wrong requestId":
        return answer(task_id, "req-somebody-else", {"decision": "approve"})
    values = {
        "wrong decision": {"decision": "maybe"},
        "unknown field": {"decision": "approve", "colour": "red"},
        "missing required field": {"note": "looks fine"},
        "wrong type": {"decision": "approve", "note": 5},
        "values not an object": ["approve"],
    }[case]
    return answer(task_id, request_id, values)


@pytest.mark.parametrize(
    "case, path",
    [
        ("wrong decision", "values.decision"),
        ("unknown field", "values.colour"),
        ("missing required field", "values.decision"),
        ("wrong type", "values.note"),
        ("values not an object", "values"),
        ("wrong requestId", "requestId"),
        ("text only", "parts"),
    ],
)
def test_invalid_answer_is_refused_and_the_task_keeps_waiting(
    rpc, unchanged, make_task, case, path
):
    task = make_task("input-required")
    request = open_request(rpc, task.id)
    params = _bad_answer(request["requestId"], task.id, case)
    err = call_error(rpc, unchanged, "message/send", params, -32602)
    paths = err["data"]["errors"]
    assert any(p == path or p.endswith("." + path) for p in paths), (path, paths)
    assert open_request(rpc, task.id) == request


# --- protocol errors: -32700, -32600, -32601 -----------------------------------------------


@pytest.mark.parametrize(
    "body", ['{"jsonrpc": "2.0", "id": 1, "method": ', "not json", '{"id": 1,}', "", b"\xff\xfe"]
)
def test_parse_error(rpc, unchanged, make_task, body):
    make_task("working")
    with unchanged():
        reply = rpc.raw(body).json()
    assert reply["id"] is None
    assert_error(reply["error"], -32700)


def _invalid(task_id: str, case: str) -> Any:
    good = envelope("tasks/pause", {"taskId": task_id})
    drop = {"jsonrpc missing": "jsonrpc", "id missing": "id", "method missing": "method"}
    if case in drop:
        return {k: v for k, v in good.items() if k != drop[case]}
    return {
        "batch": [good],
        "empty batch": [],
        "string body": "tasks/pause",
        "jsonrpc 1.0": {**good, "jsonrpc": "1.0"},
        "jsonrpc as a number": {**good, "jsonrpc": 2.0},
        "method a number": {**good, "method": 5},
        "method null": {**good, "method": None},
        "id true": {**good, "id": True},
        "id an object": {**good, "id": {"n": 1}},
        "id an array": {**good, "id": [1]},
    }[case]


@pytest.mark.parametrize(
    "case, null_id",
    [
        ("batch", True),
        ("empty batch", True),
        ("string body", True),
        ("jsonrpc missing", False),
        ("jsonrpc 1.0", False),
        ("jsonrpc as a number", False),
        ("method missing", False),
        ("method a number", False),
        ("method null", False),
        ("id true", True),
        ("id an object", True),
        ("id an array", True),
    ],
)
def test_invalid_request(rpc, unchanged, make_task, case, null_id):
    task = make_task("working")
    with unchanged():
        reply = rpc.raw(json.dumps(_invalid(task.id, case))).json()
    assert_error(reply["error"], -32600)
    assert "result" not in reply
    if null_id:
        assert reply["id"] is None


@pytest.mark.parametrize("method", ["tasks/frobnicate", "tasks/Pause", "tasks/pause/", ""])
def test_unknown_method(rpc, unchanged, make_task, method):
    task = make_task("working")
    call_error(rpc, unchanged, method, {"taskId": task.id, "id": task.id}, -32601)


# --- -32602: params ------------------------------------------------------------------------


WRONG_PARAMS = [
    ("tasks/get", {"historyLength": "5"}, "historyLength"),
    ("tasks/get", {"historyLength": -1}, "historyLength"),
    ("tasks/get", {"historyLength": 1.5}, "historyLength"),
    ("tasks/resume", {"continueTranscript": "yes"}, "continueTranscript"),
    ("tasks/resume", {"continueTranscript": 1}, "continueTranscript"),
    ("tasks/resume", {"handle": 5}, "handle"),
    ("tasks/pause", {"reason": 5}, "reason"),
    ("tasks/pause", {"mode": "later"}, "mode"),
    ("tasks/pause", {"metadata": "none"}, "metadata"),
    ("tasks/pause", {"taskId": 5}, "taskId"),
    ("tasks/await_resumption", {"reason": 5}, "reason"),
    ("tasks/await_resumption", {"reason": ""}, "reason"),
    ("tasks/await_resumption", {"summary": ["x"]}, "summary"),
    ("tasks/list", {"pageSize": "3"}, "pageSize"),
    ("tasks/list", {"pageSize": 0}, "pageSize"),
    ("tasks/list", {"state": "sleeping"}, "state"),
    ("tasks/cancel", {"id": ["x"]}, "id"),
]


@pytest.mark.parametrize(
    "method, extra, field", WRONG_PARAMS, ids=[f"{m}-{f}" for m, _, f in WRONG_PARAMS]
)
def test_wrong_param_types(rpc, unchanged, make_task, method, extra, field):
    task = make_task(ready_state(method))
    params = {**task_params(method, task.id), **extra}
    call_error(rpc, unchanged, method, params, -32602, field)


def test_await_resumption_needs_a_reason(rpc, unchanged, make_task):
    task = make_task("working")
    call_error(rpc, unchanged, "tasks/await_resumption", {"taskId": task.id}, -32602, "reason")


SEND_BAD = {
    "configuration.historyLength": lambda t: {
        "message": user_msg(taskId=t),
        "configuration": {"historyLength": "5"},
    },
    "message.role": lambda t: {"message": user_msg(taskId=t, role="agent")},
    "message.parts": lambda t: {"message": user_msg(taskId=t, parts=[])},
    "message.parts.0.text": lambda t: {
        "message": user_msg(taskId=t, parts=[{"kind": "text", "text": 5}])
    },
    "message.messageId": lambda t: {"message": user_msg(taskId=t, messageId=7)},
    "message.taskId": lambda t: {"message": user_msg(taskId=[t])},
    "message": lambda t: {"message": "hello"},
}


@pytest.mark.parametrize("field", list(SEND_BAD))
def test_send_with_wrong_param_types(rpc, unchanged, make_task, field):
    task = make_task("working")
    call_error(rpc, unchanged, "message/send", SEND_BAD[field](task.id), -32602, field)


@pytest.mark.parametrize("method", [*TASK_METHODS, "message/send", "tasks/list"])
def test_params_must_be_an_object(rpc, unchanged, make_task, method):
    task = make_task(ready_state(method))
    call_error(rpc, unchanged, method, [task.id], -32602)


@pytest.mark.parametrize("method", TASK_METHODS)
def test_missing_task_id(rpc, unchanged, make_task, method):
    make_task(ready_state(method))
    params = {"reason": "waiting"} if method == "tasks/await_resumption" else {}
    call_error(rpc, unchanged, method, params, -32602, ("taskId", "id"))


@pytest.mark.parametrize(
    "method, field",
    [
        ("tasks/pause", "bogus"),
        ("tasks/pause", "resume_when"),
        ("tasks/resume", "bogus"),
        ("tasks/resume", "continue_transcript"),
        ("tasks/await_resumption", "bogus"),
        ("tasks/await_resumption", "condition"),
    ],
)
def test_unknown_field_on_pause_methods(rpc, unchanged, make_task, method, field):
    task = make_task(ready_state(method))
    params = {**task_params(method, task.id), field: False}
    call_error(rpc, unchanged, method, params, -32602, field)


@pytest.mark.parametrize("method", TASK_METHODS)
def test_two_task_id_names_for_different_tasks(rpc, unchanged, make_task, method):
    first, second = make_task(ready_state(method)), make_task(ready_state(method))
    params = {**task_params(method, first.id, key="id"), "taskId": second.id}
    call_error(rpc, unchanged, method, params, -32602, ("id", "taskId"))


BAD_CONDITIONS = [
    ("tasks/pause", {"timeout": {"durationMinutes": 0}}, "timeout.durationMinutes"),
    ("tasks/pause", {"timeout": {"durationMinutes": "30"}}, "timeout.durationMinutes"),
    ("tasks/pause", {"timeout": {"durationMinutes": 2.5}}, "timeout.durationMinutes"),
    ("tasks/pause", {"timeout": {}}, "timeout.durationMinutes"),
    ("tasks/pause", {"timeout": 30}, "timeout"),
    ("tasks/pause", {"at": "09:00"}, "at"),
    ("tasks/pause", "30 minutes", ""),
    ("tasks/await_resumption", {"onEvent": "ci build"}, "onEvent"),
    ("tasks/await_resumption", {"onEvent": ""}, "onEvent"),
    ("tasks/await_resumption", {"on_event": "ci.done"}, "on_event"),
    ("tasks/await_resumption", {"trigger": "ci.done"}, "trigger"),
    ("tasks/await_resumption", {"trigger": {"match": {"env": "prod"}}}, "trigger.event"),
    ("tasks/await_resumption", {"trigger": {"event": "x", "when": 1}}, "trigger.when"),
    (
        "tasks/await_resumption",
        {"timeout": {"durationMinutes": 5, "onTimeout": "explode"}},
        "timeout.onTimeout",
    ),
    (
        "tasks/await_resumption",
        {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_input"}},
        "timeout.input",
    ),
    ("tasks/await_resumption", [], ""),
]


@pytest.mark.parametrize(
    "method, value, path",
    BAD_CONDITIONS,
    ids=[f"{m.split('/')[1]}-{p or type(v).__name__}" for m, v, p in BAD_CONDITIONS],
)
def test_bad_conditions_name_the_nested_field(rpc, unchanged, make_task, method, value, path):
    task = make_task("working")
    key = "resumeWhen" if method == "tasks/pause" else "conditions"
    params = {**task_params(method, task.id), key: value}
    full = f"{key}.{path}" if path else key
    call_error(rpc, unchanged, method, params, -32602, full)


# --- domain errors -------------------------------------------------------------------------


@pytest.mark.parametrize("method", [*TASK_METHODS, "message/send"])
def test_unknown_task(rpc, unchanged, make_task, method):
    make_task("working")
    missing = f"no-such-task-{uuid.uuid4()}"
    err = call_error(rpc, unchanged, method, task_params(method, missing), -32001)
    assert missing in json.dumps(err["data"])


@pytest.mark.parametrize("state", TERMINAL)
def test_cancel_of_a_terminal_task(rpc, unchanged, make_task, state):
    task = make_task(state)
    call_error(rpc, unchanged, "tasks/cancel", {"id": task.id}, -32002)
    assert state_of(rpc, task.id) == state


@pytest.mark.parametrize("state", PAUSED)
def test_send_to_a_paused_task(rpc, unchanged, make_task, state):
    task = make_task(state)
    call_error(rpc, unchanged, "message/send", task_params("message/send", task.id), -32004)
    assert state_of(rpc, task.id) == state


@pytest.mark.parametrize("state", TERMINAL)
def test_send_to_a_terminal_task(rpc, unchanged, make_task, state):
    task = make_task(state)
    params = task_params("message/send", task.id)
    err = call_error(rpc, unchanged, "message/send", params, -32004)
    assert "terminal" in err["data"]["detail"]


@pytest.mark.parametrize("state", ["input-required", "auth-required", *TERMINAL])
def test_pause_not_allowed(rpc, unchanged, make_task, state):
    task = make_task(state)
    call_error(rpc, unchanged, "tasks/pause", {"taskId": task.id}, -32011)
    assert state_of(rpc, task.id) == state


@pytest.mark.parametrize("state", [s for s in ALL_STATES if s != "working"])
def test_await_resumption_of_a_task_that_is_not_working(rpc, unchanged, make_task, state):
    task = make_task(state)
    params = task_params("tasks/await_resumption", task.id)
    call_error(rpc, unchanged, "tasks/await_resumption", params, -32011)


def test_resume_with_the_handle_of_an_earlier_suspension(rpc, unchanged, make_task):
    task = make_task("working")
    first = rpc.result("tasks/pause", {"taskId": task.id})["handle"]
    rpc.result("tasks/resume", {"taskId": task.id, "handle": first})
    second = rpc.result("tasks/pause", {"taskId": task.id})["handle"]
    assert second != first
    call_error(rpc, unchanged, "tasks/resume", {"taskId": task.id, "handle": first}, -32012)
    assert state_of(rpc, task.id) == "paused-by-client"
    out = rpc.result("tasks/resume", {"taskId": task.id, "handle": second})
    assert out["state"] == "working"


@pytest.mark.parametrize("whose", ["another task's", "made up"])
def test_resume_with_a_handle_that_is_not_this_tasks(rpc, unchanged, make_task, whose):
    task, other = make_task("paused-by-client"), make_task("paused-by-agent")
    handle = pause_of(rpc, other.id)["handle"] if whose == "another task's" else "suspend-x"
    call_error(rpc, unchanged, "tasks/resume", {"taskId": task.id, "handle": handle}, -32012)


@pytest.mark.parametrize("state", [s for s in ALL_STATES if s not in PAUSED])
def test_resume_of_a_task_that_is_not_paused(rpc, unchanged, make_task, state):
    task = make_task(state)
    call_error(rpc, unchanged, "tasks/resume", {"taskId": task.id}, -32013)


# --- authentication and HTTP ---------------------------------------------------------------


def _pause_body(task_id: str) -> dict:
    return envelope("tasks/pause", {"taskId": task_id, "reason": "review"})


def test_no_credentials(rpc, unchanged, make_task):
    task = make_task("working")
    with unchanged():
        response = rpc.raw(_pause_body(task.id), token="")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].lower().startswith("bearer")
    assert_error(response.json()["error"], -32600)


@pytest.mark.parametrize(
    "authorization",
    ["Bearer td_00000000_not-a-real-key", "Bearer garbage", "Bearer", "Basic dXNlcjpwdw=="],
)
def test_bad_credentials(rpc, unchanged, make_task, authorization):
    task = make_task("working")
    with unchanged():
        response = rpc.raw(_pause_body(task.id), headers={"Authorization": authorization})
    assert response.status_code == 401
    assert "WWW-Authenticate" in response.headers


def test_revoked_key(rpc, unchanged, make_task, key_with):
    task = make_task("working")
    name, token = key_with("read", "write")
    assert rpc.raw(envelope("tasks/get", {"id": task.id}), token=token).status_code == 200
    assert api_keys.revoke(name)
    # the server (another process) remembers verified keys for REVALIDATE_SECONDS at most
    deadline = time.monotonic() + api_keys.remember_seconds() + 2.0
    while rpc.raw(envelope("tasks/get", {"id": task.id}), token=token).status_code != 401:
        assert time.monotonic() < deadline, "a revoked key still works past the bound"
    with unchanged():
        response = rpc.raw(_pause_body(task.id), token=token)
    assert response.status_code == 401
    assert state_of(rpc, task.id) == "working"


def test_read_only_key_cannot_pause(rpc, unchanged, make_task, key_with):
    task = make_task("working")
    _, token = key_with("read")
    ok = rpc.raw(envelope("tasks/get", {"id": task.id}), token=token)
    assert ok.status_code == 200 and ok.json()["result"]["id"] == task.id
    with unchanged():
        response = rpc.raw(_pause_body(task.id), token=token)
    assert response.status_code == 403
    assert_error(response.json()["error"], -32600)
    assert state_of(rpc, task.id) == "working"


def test_key_without_agent_scope_cannot_park(rpc, unchanged, make_task, key_with):
    task = make_task("working")
    _, token = key_with("read", "write")
    body = envelope("tasks/await_resumption", {"taskId": task.id, "reason": "waiting"})
    with unchanged():
        response = rpc.raw(body, token=token)
    assert response.status_code == 403
    assert state_of(rpc, task.id) == "working"


@pytest.mark.parametrize("path", ["/a2a", "/a2a/"])
def test_get_is_not_allowed(rpc, path):
    response = rpc.http.get(path, headers={"Authorization": f"Bearer {rpc.token}"})
    assert response.status_code == 405
    assert "POST" in response.headers["Allow"]


@pytest.mark.parametrize("path", ["/a2a", "/a2a/"])
def test_endpoint_answers_with_and_without_slash(rpc, make_task, path):
    task = make_task("working")
    response = rpc.raw(_pause_body(task.id), path=path)
    assert response.status_code == 200
    assert response.json()["result"]["state"] == "paused-by-client"


# --- JSON-RPC ids --------------------------------------------------------------------------


@pytest.mark.parametrize("rpc_id", ["req-019abf6b", "", "42", 7, 0, -1, 2**40, None])
def test_ids_are_echoed(rpc, make_task, rpc_id):
    task = make_task("working")
    ok = rpc("tasks/get", {"id": task.id}, id=rpc_id)
    assert set(ok) == {"jsonrpc", "id", "result"}
    assert ok["jsonrpc"] == "2.0"
    for reply in (
        ok,
        rpc("tasks/frobnicate", {}, id=rpc_id),
        rpc("tasks/get", {"id": "no-such-task"}, id=rpc_id),
        rpc("tasks/get", {"historyLength": "5", "id": task.id}, id=rpc_id),
    ):
        assert reply["id"] == rpc_id and type(reply["id"]) is type(rpc_id), reply


# --- answers: after the request is answered -------------------------------------------------


def test_answered_request_no_longer_shows_in_the_status(rpc, make_task):
    """Once answered, the status must not still carry the request a UI would prompt for."""
    task = make_task("input-required")
    request = open_request(rpc, task.id)
    rpc.result("message/send", answer(task.id, request["requestId"], {"decision": "approve"}))
    status = get(rpc, task.id)["status"]
    assert status["state"] == "working" and "message" not in status


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_late_answer_is_refused(rpc, unchanged, make_task, decision):
    """A second answer (a double-click, a retry with another decision) must not slip in."""
    task = make_task("input-required")
    request_id = open_request(rpc, task.id)["requestId"]
    rpc.result("message/send", answer(task.id, request_id, {"decision": "approve"}))
    err = call_error(
        rpc, unchanged, "message/send", answer(task.id, request_id, {"decision": decision}), -32004
    )
    assert "no open input request" in err["data"]["detail"]


def test_an_answer_must_name_its_request(rpc, unchanged, make_task):
    task = make_task("input-required")
    params = answer(task.id, "unused", {"decision": "approve"})
    del params["message"]["parts"][0]["data"]["requestId"]
    call_error(rpc, unchanged, "message/send", params, -32602, "message.parts.0.data.requestId")
    assert state_of(rpc, task.id) == "input-required"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_missing_id_on_standard_methods_names_id(rpc, unchanged, method):
    call_error(rpc, unchanged, method, {}, -32602, "id")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_constants_are_parse_errors(rpc, unchanged, make_task, constant):
    task = make_task("paused-by-client")
    params = '{"taskId": "' + task.id + '", "input": ' + constant + "}"
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tasks/resume", "params": ' + params + "}"
    with unchanged():
        answer_ = rpc.raw(body, headers={"Content-Type": "application/json"}).json()
    assert answer_["error"]["code"] == -32700 and answer_["id"] is None


def test_a_request_without_id_is_answered_with_a_null_id(rpc, make_task):
    """JSON-RPC calls that a notification; A2A clients (and the conformance kit) still expect
    an answer, so Taskdeck answers it rather than acting silently."""
    task = make_task("working")
    body = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": task.id}}
    reply = rpc.raw(body).json()
    assert reply["id"] is None and reply["result"]["id"] == task.id


def test_a_0_3_part_without_kind_is_refused(rpc, unchanged):
    """0.3 parts name their kind; only 1.0 calls (no kinds at all) infer it from the shape."""
    message = {"messageId": "nokind", "role": "user", "parts": [{"text": "hi"}]}
    with unchanged():
        error = rpc.error("message/send", {"message": message})
    assert error["code"] == -32602 and "message.parts.0.kind" in error["data"]["errors"]
