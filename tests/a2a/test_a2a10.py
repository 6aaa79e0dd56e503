"""A2A 1.0 over the same endpoint: method names, wire format, errors with ErrorInfo,
version negotiation, snake_case params, and its own agent card."""

from __future__ import annotations

import json

import pytest

from a2a import services
from tests.conftest import CLIENT, local_http

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}


def call10(rpc, method: str, params: dict, headers=V10) -> dict:
    return rpc(method, params, headers=headers)


def walk_keys(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            if k not in ("metadata", "data"):
                yield from walk_keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_keys(v)


def assert_10_shape(task: dict) -> None:
    keys = set(walk_keys(task))
    assert "kind" not in keys and "final" not in keys
    assert not any("_" in k for k in keys), keys
    assert task["status"]["state"].startswith("TASK_STATE_")
    assert task["status"]["timestamp"].endswith("Z")
    for m in task.get("history", []):
        assert m["role"] in ("ROLE_USER", "ROLE_AGENT")


def test_send_and_get_in_the_1_0_format(rpc):
    params = {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": True},
        "metadata": {"skill": "batch"},
    }
    sent = call10(rpc, "SendMessage", params)["result"]
    task = sent["task"]
    assert_10_shape(task)
    assert task["history"][0]["parts"] == [{"text": "hi"}]
    got = call10(rpc, "GetTask", {"id": task["id"], "history_length": 0})["result"]
    assert_10_shape(got)
    assert got["id"] == task["id"] and "history" not in got


def test_parts_of_every_kind_round_trip(rpc):
    parts = [
        {"text": "t"},
        {"data": {"k": 1}},
        {"raw": "dGNr", "filename": "a.txt", "mediaType": "text/plain"},
        {"url": "https://example.com/a.txt", "mediaType": "text/plain"},
    ]
    params = {
        "message": {"messageId": "m2", "role": "ROLE_USER", "parts": parts},
        "configuration": {"returnImmediately": True},
    }
    task = call10(rpc, "SendMessage", params)["result"]["task"]
    assert task["history"][0]["parts"] == parts
    legacy = rpc.result("tasks/get", {"id": task["id"]})["history"][0]["parts"]
    assert [p["kind"] for p in legacy] == ["text", "data", "file", "file"]


def test_pause_resume_in_1_0_names(rpc, make_task):
    task = make_task("working")
    paused = call10(rpc, "PauseTask", {"taskId": task.id, "reason": "check"})["result"]
    assert paused["state"] == "TASK_STATE_PAUSED_BY_CLIENT"
    resumed = call10(rpc, "ResumeTask", {"taskId": task.id})["result"]
    assert resumed["state"] == "TASK_STATE_WORKING"
    assert resumed["previousState"] == "TASK_STATE_PAUSED_BY_CLIENT"


def test_list_with_snake_case_params(rpc, make_task):
    task = make_task("working", context_id="ctx-10")
    make_task("working")
    page = call10(rpc, "ListTasks", {"context_id": "ctx-10", "page_size": 5})["result"]
    assert [t["id"] for t in page["tasks"]] == [task.id]
    assert page["nextPageToken"] == "" and page["totalSize"] == 1
    assert "artifacts" not in page["tasks"][0]


def error_info(error: dict) -> dict:
    (info, *_) = error["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["domain"] == "a2a-protocol.org"
    assert all(isinstance(v, str) for v in info["metadata"].values())
    return info


@pytest.mark.parametrize(
    ("method", "params", "code", "reason"),
    [
        ("GetTask", {"id": "nope"}, -32001, "TASK_NOT_FOUND"),
        ("CancelTask", {"id": "nope"}, -32001, "TASK_NOT_FOUND"),
        ("GetTask", {"id": 5}, -32602, "INVALID_PARAMS"),
        ("ResumeTask", {"id": "nope"}, -32001, "TASK_NOT_FOUND"),
    ],
)
def test_errors_carry_error_info(rpc, unchanged, method, params, code, reason):
    with unchanged():
        error = call10(rpc, method, params)["error"]
    assert error["code"] == code and error_info(error)["reason"] == reason
    assert set(error) <= {"code", "message", "data"}


def test_bad_params_list_field_violations(rpc):
    error = call10(rpc, "SendMessage", {"message": {"role": "ROLE_USER", "parts": []}})["error"]
    assert error["code"] == -32602
    violations = error["data"][1]["fieldViolations"]
    assert {v["field"] for v in violations} >= {"message.messageId", "message.parts"}


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "0.3"}, {"A2A-Version": "99.0"}])
def test_1_0_methods_need_a_1_x_version_header(rpc, unchanged, make_task, headers):
    task = make_task("working")
    with unchanged():
        error = call10(rpc, "CancelTask", {"id": task.id}, headers=headers)["error"]
    assert error["code"] == -32009 and error_info(error)["reason"] == "VERSION_NOT_SUPPORTED"


def test_an_unknown_major_version_is_refused_for_0_3_methods_too(rpc, make_task):
    task = make_task("working")
    error = rpc("tasks/get", {"id": task.id}, headers={"A2A-Version": "99.0"})["error"]
    assert error["code"] == -32009


def test_content_types_other_than_json_are_refused(rpc, unchanged):
    with unchanged():
        response = rpc.raw("{'jsonrpc': '2.0'}", headers={"Content-Type": "text/plain", **V10})
    assert response.json()["error"]["code"] == -32005


def test_subscribing_to_a_finished_task_is_a_plain_json_error(rpc, make_task):
    task = make_task("completed")
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task.id}}
    response = rpc.raw(body, headers=V10)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == -32004


def test_0_3_resubscribe_errors_come_inside_the_stream(rpc):
    body = {"jsonrpc": "2.0", "id": "r", "method": "tasks/resubscribe", "params": {"id": "nope"}}
    response = rpc.raw(body)
    assert response.headers["content-type"].startswith("text/event-stream")
    frame = json.loads(response.text.split("data: ", 1)[1])
    assert frame["error"]["code"] == -32001 and "not found" in frame["error"]["data"]["detail"]


@pytest.fixture
def http(asgi_server):
    with local_http(base_url=asgi_server, timeout=30) as client:
        yield client


def test_one_card_for_both_versions_and_the_1_0_card_alone_on_request(http, asgi_server):
    """Without A2A-Version: the combined card (docs/design/a2a-surface.md, D23); with
    `A2A-Version: 1.0`: the 1.0 card alone, which the 1.0 schema accepts."""
    card10 = http.get("/.well-known/agent-card.json", headers=V10).json()
    bindings = [(i["protocolBinding"], i["url"]) for i in card10["supportedInterfaces"]]
    assert bindings[:2] == [
        ("JSONRPC", f"{asgi_server}/a2a/"),
        ("HTTP+JSON", f"{asgi_server}/a2a/rest"),
    ]
    assert set(card10["capabilities"]) <= {
        "streaming",
        "pushNotifications",
        "extensions",
        "extendedAgentCard",
    }
    assert not {"url", "preferredTransport", "protocolVersion", "security"} & set(card10)
    pause = card10["capabilities"]["extensions"][0]["params"]
    assert pause["supportsPause"] is True and "ResumeTask" in pause["methods10"]
    both = http.get("/.well-known/agent-card.json").json()
    # what a 0.3 client reads: the 0.3 card's fields, naming JSON-RPC only
    assert both["url"] == f"{asgi_server}/a2a/" and both["preferredTransport"] == "JSONRPC"
    assert both["protocolVersion"] == "0.3.0" and both["security"] == [{"bearer": []}]
    assert both["capabilities"]["supportsPause"] is True
    assert both["securitySchemes"]["bearer"]["type"] == "http"
    # what a 1.0 client reads: the 1.0 card's values, and JSON-RPC once more as 0.3, last
    assert both["supportedInterfaces"] == [
        *card10["supportedInterfaces"],
        {"url": f"{asgi_server}/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"},
    ]
    for key in ("name", "skills", "securityRequirements", "defaultInputModes"):
        assert both[key] == card10[key]
    assert {k: both["capabilities"][k] for k in card10["capabilities"]} == card10["capabilities"]
    bearer = card10["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]
    assert both["securitySchemes"]["bearer"]["httpAuthSecurityScheme"] == bearer
    # the 0.3 header gets the combined card too; caches keep the two apart
    assert http.get("/.well-known/agent-card.json", headers={"A2A-Version": "0.3"}).json() == both
    assert http.get("/.well-known/agent-card.json", headers=V10).headers["Vary"] == "A2A-Version"


def test_paused_tasks_stream_in_1_0_form(rpc, make_task):
    """A 1.0 subscriber sees a pause as a statusUpdate with the RFC's fields."""
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="freeze")
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task.id}}
    headers = {"Authorization": f"Bearer {rpc.token}", "Last-Event-ID": "0", **V10}
    with rpc.http.stream("POST", "/a2a/", json=body, headers=headers) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and "PAUSED" in line:
                event = json.loads(line[6:])["result"]["statusUpdate"]
                break
    assert event["status"]["state"] == "TASK_STATE_PAUSED_BY_CLIENT"
    assert event["metadata"]["reason"] == "freeze" and "final" not in event
