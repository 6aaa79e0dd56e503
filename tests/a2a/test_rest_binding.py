"""The A2A 1.0 HTTP+JSON binding (/a2a/rest/) over real HTTP against the live Daphne: each
route reaches the same services as JSON-RPC, errors are AIP-193 bodies with A2A 1.0 §5.4's
statuses and the same ErrorInfo, and a refused request changes nothing."""

from __future__ import annotations

import json

import httpx
import pytest

from a2a import api_keys, services
from a2a.models import Task
from tests.conftest import CLIENT, local_http

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rest(asgi_server, api_key):
    headers = {"Authorization": f"Bearer {api_key}", "A2A-Version": "1.0"}
    with local_http(base_url=f"{asgi_server}/a2a/rest", headers=headers, timeout=30) as c:
        yield c


def error_of(response: httpx.Response, status: int, grpc: str, reason: str | None) -> dict:
    """The AIP-193 error body, checked: HTTP status, its gRPC name, the ErrorInfo."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == status and error["status"] == grpc and error["message"]
    if reason is not None:
        info = error["details"][0]
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        assert info["reason"] == reason and info["domain"] == "a2a-protocol.org"
    return error


def send(rest, text="hi", message_id="m1", **config) -> dict:
    body = {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": True, **config},
        "metadata": {"skill": "batch"},
    }
    response = rest.post("/message:send", json=body)
    assert response.status_code == 200, response.text
    return response.json()["task"]


def test_send_get_list_and_cancel(rest):
    task = send(rest)
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert task["history"][0]["parts"] == [{"text": "hi"}]
    got = rest.get(f"/tasks/{task['id']}", params={"historyLength": 0}).json()
    assert got["id"] == task["id"] and "history" not in got
    page = rest.get(
        "/tasks", params={"contextId": task["contextId"], "pageSize": 5, "includeArtifacts": "true"}
    ).json()
    assert [t["id"] for t in page["tasks"]] == [task["id"]] and page["pageSize"] == 5
    canceled = rest.post(f"/tasks/{task['id']}:cancel").json()
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert Task.objects.get(pk=task["id"]).state == "canceled"


def test_pause_and_resume_are_routes_of_the_task(rest, make_task):
    task = make_task("working")
    paused = rest.post(f"/tasks/{task.id}:pause", json={"reason": "release freeze"}).json()
    assert paused["state"] == "TASK_STATE_PAUSED_BY_CLIENT" and paused["handle"]
    resumed = rest.post(f"/tasks/{task.id}:resume", json={"handle": paused["handle"]}).json()
    assert resumed["previousState"] == "TASK_STATE_PAUSED_BY_CLIENT"
    task.refresh_from_db()
    assert task.state == "working"


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_subscribe_streams_1_0_events_until_the_task_ends(rest, make_task, verb):
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="hold")
    events, ids = [], []
    with rest.stream(verb, f"/tasks/{task.id}:subscribe") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if len(events) == 1:  # the snapshot: now end the task
                    services.cancel_task(task.id, actor=CLIENT)
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_PAUSED_BY_CLIENT"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert ids == sorted(ids)


def test_a_streaming_send_starts_with_the_task(rest):
    body = {
        "message": {"messageId": "s1", "role": "ROLE_USER", "parts": [{"text": "go"}]},
        "metadata": {"skill": "batch"},
    }
    with rest.stream("POST", "/message:stream", json=body) as response:
        line = next(x for x in response.iter_lines() if x.startswith("data: "))
    first = json.loads(line[6:])
    assert first["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"


# --- refusals: the right status, the same details as the other bindings, nothing written --


def test_unknown_task_is_404_task_not_found(rest, unchanged):
    with unchanged():
        error = error_of(rest.get("/tasks/nope"), 404, "NOT_FOUND", "TASK_NOT_FOUND")
    assert error["details"][0]["metadata"]["taskId"] == "nope"


def test_canceling_a_finished_task_is_409(rest, make_task, unchanged):
    task = make_task("completed")
    with unchanged():
        error_of(rest.post(f"/tasks/{task.id}:cancel"), 409, "FAILED_PRECONDITION", None)


def test_no_key_is_401_and_a_missing_scope_403(rest, unchanged):
    _, reader = api_keys.create_key("reader", ["read"])
    body = {"message": {"messageId": "x", "role": "ROLE_USER", "parts": [{"text": "x"}]}}
    with unchanged():
        response = rest.post("/message:send", json=body, headers={"Authorization": ""})
        error_of(response, 401, "UNAUTHENTICATED", None)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        response = rest.post(
            "/message:send", json=body, headers={"Authorization": f"Bearer {reader}"}
        )
        error_of(response, 403, "PERMISSION_DENIED", None)


@pytest.mark.parametrize(
    ("verb", "path", "kw", "status", "grpc", "reason"),
    [
        ("GET", "/tasks", {"params": {"pageSize": "ten"}}, 400, "INVALID_ARGUMENT",
         "INVALID_PARAMS"),
        ("GET", "/tasks", {"params": {"includeArtifacts": "yes"}}, 400, "INVALID_ARGUMENT",
         "INVALID_PARAMS"),
        ("POST", "/message:send", {"content": b"{not json"}, 400, "INVALID_ARGUMENT", None),
        ("POST", "/message:send", {"content": b"[1]"}, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
        ("POST", "/message:send", {"content": b"x", "headers": {"Content-Type": "text/plain"}},
         415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"),
        ("POST", "/message:send", {"json": {"message": {"role": "ROLE_USER", "parts": []}}},
         400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
        ("POST", "/message:send", {"json": {}, "headers": {"A2A-Version": "0.3"}}, 400,
         "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"),
        ("GET", "/nowhere", {}, 404, "NOT_FOUND", None),
    ],
)  # fmt: skip
def test_bad_requests_are_refused_with_their_status(
    rest, unchanged, verb, path, kw, status, grpc, reason
):
    with unchanged():
        error_of(rest.request(verb, path, **kw), status, grpc, reason)


def test_a_verb_the_route_does_not_take_is_405_with_allow(rest, make_task, unchanged):
    task = make_task("working")
    with unchanged():
        response = rest.delete(f"/tasks/{task.id}")
        error_of(response, 405, "UNIMPLEMENTED", None)
    assert response.headers["Allow"] == "GET"


def test_bad_params_name_their_fields(rest):
    response = rest.post("/message:send", json={"message": {"role": "ROLE_USER", "parts": []}})
    error = error_of(response, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    violations = error["details"][1]["fieldViolations"]
    assert {v["field"] for v in violations} >= {"message.messageId", "message.parts"}


def test_a_body_naming_another_task_than_the_path_is_refused(rest, make_task, unchanged):
    task, other = make_task("working"), make_task("working")
    with unchanged():
        response = rest.post(f"/tasks/{task.id}:pause", json={"id": other.id, "reason": "x"})
        error = error_of(response, 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    assert "id" in error["details"][1]["fieldViolations"][0]["field"]


def test_subscribing_to_a_finished_task_is_an_http_error_not_a_stream(rest, make_task):
    task = make_task("completed")
    response = rest.post(f"/tasks/{task.id}:subscribe")
    error_of(response, 400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION")


def test_a_subscriber_reconnecting_with_last_event_id_gets_only_what_it_missed(rest, make_task):
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="first")
    seen = task.events.order_by("-id").values_list("id", flat=True).first()
    services.resume_task(task.id, actor=CLIENT)
    services.cancel_task(task.id, actor=CLIENT)
    with rest.stream(
        "GET", f"/tasks/{task.id}:subscribe", headers={"Last-Event-ID": str(seen)}
    ) as r:
        data = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: ")]
    states = [e["statusUpdate"]["status"]["state"] for e in data]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]  # no snapshot, no pause
