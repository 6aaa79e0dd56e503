"""Every task belongs to someone (issue 12): a key sees and acts on its own tenant's tasks
only; another tenant's task is not found — the same answer as a task that does not exist —
and nothing changes; a key with the `operator` scope sees every tenant's; a revoked key
nothing at all. One table crosses every A2A method (0.3 and 1.0, push included) with those
callers, over real HTTP to the live server; the other doors follow below it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from a2a import api_keys, services
from a2a.models import Task
from agui.models import Interrupt
from tests.conftest import APPROVAL_REQUEST, local_http, user_message

pytestmark = pytest.mark.django_db(transaction=True)
ALPHA = services.Actor("apikey", "alpha", tenant="key:alpha", restricted=True)
AGENT = services.Actor("agent", "test")
V10 = {"A2A-Version": "1.0"}


@pytest.fixture
def keys(transactional_db) -> dict[str, str]:
    """Callers by role: the owner's key, a second key of the owner, another tenant's keys
    (all scopes, read only), an operator key, and a revoked key of the owner."""
    made = {
        "owner": api_keys.create_key("alpha", ["read", "write", "agent"]),
        "owner-2": api_keys.create_key("alpha-ci", ["read", "write", "agent"], owner="alpha"),
        "other": api_keys.create_key("beta", ["read", "write", "agent"]),
        "other-read": api_keys.create_key("beta-ro", ["read"], owner="beta"),
        "operator": api_keys.create_key("ops", ["read", "write", "agent", "operator"]),
        "revoked": api_keys.create_key("alpha-old", ["read", "write", "agent"], owner="alpha"),
    }
    api_keys.revoke("alpha-old")
    return {role: token for role, (_, token) in made.items()}


def alphas(state: str = "working") -> Task:
    """A task of tenant alpha in `state` (made through the services, as its key would)."""
    task = services.create_task(user_message("alpha's work"), actor=ALPHA, skill="approval")
    if state == "submitted":
        return task
    services.start_task(task.id, actor=AGENT)
    if state == "input-required":
        services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    elif state == "paused-by-client":
        services.pause_task(task.id, actor=ALPHA, reason="hold")
    elif state == "paused-by-agent":
        services.park_task(
            task.id, actor=AGENT, reason="waiting on ci", conditions={"onEvent": "ci.done:7"}
        )
    return Task.objects.get(pk=task.id)


def msg(text: str = "more", **extra) -> dict:
    return {
        "role": "user",
        "messageId": f"m-{text}",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def answer_part(task: Task) -> dict:
    request_id = task.input_request["requestId"]
    return {
        "kind": "data",
        "data": {
            "type": "a2a.input.response",
            "requestId": request_id,
            "values": {"decision": "approve"},
        },
    }


PUSH = {"url": "https://hooks.example.com/alpha", "token": "alpha-secret"}
# (method, task state, params(task), headers, is a stream)
CASES: list[tuple[str, str, Any, dict, bool]] = [
    ("tasks/get", "working", lambda t: {"id": t.id}, {}, False),
    ("GetTask", "working", lambda t: {"id": t.id}, V10, False),
    ("tasks/cancel", "working", lambda t: {"id": t.id}, {}, False),
    ("CancelTask", "working", lambda t: {"id": t.id}, V10, False),
    ("tasks/pause", "working", lambda t: {"taskId": t.id, "reason": "x"}, {}, False),
    ("PauseTask", "working", lambda t: {"taskId": t.id}, V10, False),
    ("tasks/resume", "paused-by-client", lambda t: {"taskId": t.id}, {}, False),
    ("ResumeTask", "paused-by-client", lambda t: {"taskId": t.id}, V10, False),
    (
        "tasks/await_resumption",
        "working",
        lambda t: {
            "taskId": t.id,
            "reason": "r",
            "conditions": {"timeout": {"durationMinutes": 1, "onTimeout": "fail"}},
        },
        {},
        False,
    ),
    ("AwaitTaskResumption", "working", lambda t: {"taskId": t.id, "reason": "r"}, V10, False),
    ("message/send", "working", lambda t: {"message": msg(taskId=t.id)}, {}, False),
    (
        "message/send",
        "input-required",
        lambda t: {"message": {**msg(taskId=t.id), "parts": [answer_part(t)]}},
        {},
        False,
    ),
    (
        "SendMessage",
        "working",
        lambda t: {"message": msg(taskId=t.id), "configuration": {"returnImmediately": True}},
        V10,
        False,
    ),
    ("message/send", "completed", lambda t: {"message": msg(referenceTaskIds=[t.id])}, {}, False),
    ("message/stream", "working", lambda t: {"message": msg(taskId=t.id)}, {}, True),
    ("SendStreamingMessage", "working", lambda t: {"message": msg(taskId=t.id)}, V10, True),
    ("tasks/resubscribe", "working", lambda t: {"id": t.id}, {}, True),
    ("SubscribeToTask", "working", lambda t: {"id": t.id}, V10, True),
    (
        "tasks/pushNotificationConfig/set",
        "working",
        lambda t: {"taskId": t.id, "pushNotificationConfig": PUSH},
        {},
        False,
    ),
    ("CreateTaskPushNotificationConfig", "working", lambda t: {"taskId": t.id, **PUSH}, V10, False),
    ("tasks/pushNotificationConfig/get", "working", lambda t: {"id": t.id}, {}, False),
    ("tasks/pushNotificationConfig/list", "working", lambda t: {"id": t.id}, {}, False),
    ("ListTaskPushNotificationConfigs", "working", lambda t: {"taskId": t.id}, V10, False),
    (
        "GetTaskPushNotificationConfig",
        "working",
        lambda t: {"taskId": t.id, "id": t.id},
        V10,
        False,
    ),
    (
        "tasks/pushNotificationConfig/delete",
        "working",
        lambda t: {"id": t.id, "pushNotificationConfigId": t.id},
        {},
        False,
    ),
    (
        "DeleteTaskPushNotificationConfig",
        "working",
        lambda t: {"taskId": t.id, "id": t.id},
        V10,
        False,
    ),
]
PUSH_READS = {"get", "list", "delete"}


def call(http: httpx.Client, token: str, method: str, params, headers, stream: bool) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    h = {"Authorization": f"Bearer {token}", **headers}
    if not stream:
        return http.post("/a2a/", json=body, headers=h).json()
    with http.stream("POST", "/a2a/", json=body, headers=h) as response:
        if not response.headers["content-type"].startswith("text/event-stream"):
            return json.loads(response.read())
        for line in response.iter_lines():  # the first frame says enough
            if line.startswith("data: "):
                return json.loads(line[6:])
    raise AssertionError("an empty stream")


def error_code(answer: dict) -> int | None:
    return (answer.get("error") or {}).get("code")


@pytest.mark.parametrize(
    ("method", "state", "params", "headers", "stream"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_a2a_methods_answer_only_the_tasks_owner(
    asgi_server, keys, unchanged, method, state, params, headers, stream
):
    task = alphas(state)
    if any(word in method.lower() for word in PUSH_READS) and "Create" not in method:
        services_config(task)
    with local_http(base_url=asgi_server, timeout=30) as http:
        # another tenant's keys: not found, exactly as for a task that does not exist
        for role in ("other", "other-read"):
            with unchanged():
                got = call(http, keys[role], method, params(task), headers, stream)
            missing = call(http, keys[role], method, params(_ghost(task)), headers, stream)
            assert error_code(got) == error_code(missing), (role, got, missing)
            assert error_code(got) in (-32001, -32602, 403) or "error" in got, (role, got)
            assert "alpha's work" not in json.dumps(got) and "alpha-secret" not in json.dumps(got)
        # a revoked key of the owner's tenant: not even authenticated
        response = http.post(
            "/a2a/",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params(task)},
            headers={"Authorization": f"Bearer {keys['revoked']}", **headers},
        )
        assert response.status_code == 401
        # the owner's second key (same tenant) and an operator key are answered
        who = "operator" if method in ("tasks/cancel", "CancelTask") else "owner-2"
        got = call(http, keys[who], method, params(task), headers, stream)
        assert "error" not in got, (who, got)


def services_config(task: Task) -> None:
    from a2a.push import services as push

    push.set_config(
        task.id, push.ConfigInput(url=PUSH["url"], token=PUSH["token"]), version="0.3", actor=ALPHA
    )


def _ghost(task: Task):
    """The same params for a task id that does not exist."""

    class Ghost:
        id = "00000000-0000-0000-0000-000000000000"
        input_request = task.input_request

    return Ghost()


def test_tasks_list_shows_a_tenant_its_own_tasks_and_an_operator_all(asgi_server, keys):
    mine = alphas()
    theirs = services.create_task(
        user_message("beta's"),
        actor=services.Actor("apikey", "beta", tenant="key:beta", restricted=True),
        skill="approval",
    )
    with local_http(base_url=asgi_server, timeout=30) as http:

        def ids(role: str, method="tasks/list", headers=None) -> set[str]:
            got = call(http, keys[role], method, {}, headers or {}, False)["result"]
            return {t["id"] for t in got["tasks"]}

        assert ids("owner") == ids("owner-2") == {mine.id}
        assert ids("other") == ids("other-read") == {theirs.id}
        assert ids("other", "ListTasks", V10) == {theirs.id}
        assert ids("operator") == {mine.id, theirs.id}


def test_an_event_wakes_only_tasks_its_emitter_may_act_on(asgi_server, keys, unchanged):
    parked = alphas("paused-by-agent")
    with local_http(base_url=asgi_server, timeout=30) as http:

        def emit(role: str) -> dict:
            response = http.post(
                "/api/events",
                json={"name": "ci.done:7", "payload": {}},
                headers={"Authorization": f"Bearer {keys[role]}"},
            )
            assert response.status_code == 201, response.text
            return response.json()

        assert emit("other")["woke"] == []
        assert Task.objects.get(pk=parked.id).state == "paused-by-agent"
        assert [w["taskId"] for w in emit("owner-2")["woke"]] == [parked.id]


def test_an_agui_run_of_another_tenant_cannot_reach_a_thread(asgi_server, keys, unchanged):
    """The same threadId in two tenants is two threads: the other tenant cannot answer
    (or even see) the owner's interrupt."""
    with local_http(base_url=asgi_server, timeout=30) as http:

        def run(role: str, **body) -> list[dict]:
            payload = {
                "threadId": "shared-thread",
                "runId": f"run-{role}-{len(body)}",
                "messages": [],
                "state": {},
                "tools": [],
                "context": [],
                "forwardedProps": {},
                **body,
            }
            events = []
            with http.stream(
                "POST", "/agui/run", json=payload, headers={"Authorization": f"Bearer {keys[role]}"}
            ) as response:
                for line in response.iter_lines():  # up to the start or the refusal
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
                        if events[-1]["type"] in ("RUN_STARTED", "RUN_ERROR"):
                            break
            return events

        first = run("owner", messages=[{"id": "u1", "role": "user", "content": "Roll out"}])
        assert first[0]["type"] == "RUN_STARTED"
        task = Task.objects.get(origin="agui")
        services.start_task(task.id, actor=AGENT)
        services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
        interrupt = Interrupt.objects.get(task=task, pending=True)
        with unchanged():
            stolen = run(
                "other",
                resume=[
                    {
                        "interruptId": interrupt.interrupt_id,
                        "status": "resolved",
                        "payload": {"decision": "approve"},
                    }
                ],
            )
        assert [e["type"] for e in stolen] == ["RUN_ERROR"]
        assert stolen[0]["code"] == "interrupt_unknown"
        assert Task.objects.get(pk=task.id).state == "input-required"


def test_a_keys_socket_carries_its_own_tenants_tasks_only(asgi_server, keys):
    mine = alphas()
    url = asgi_server.replace("http://", "ws://") + "/ws/agui/"

    def snapshot_ids(role: str) -> set[str]:
        with connect(
            url,
            additional_headers={
                "Authorization": f"Bearer {keys[role]}",
                "Origin": "http://127.0.0.1",
            },
        ) as ws:
            first = json.loads(ws.recv(timeout=15))
            assert first["type"] == "STATE_SNAPSHOT"
            return set(first["snapshot"]["view"]["tasks"])

    assert snapshot_ids("owner") == {mine.id}
    assert snapshot_ids("other-read") == set()
    assert snapshot_ids("operator") == {mine.id}
    with connect(
        url,
        additional_headers={
            "Authorization": f"Bearer {keys['other-read']}",
            "Origin": "http://127.0.0.1",
        },
    ) as ws:
        json.loads(ws.recv(timeout=15))  # the (empty) snapshot
        services.pause_task(mine.id, actor=ALPHA, reason="not for beta")
        theirs = services.create_task(
            user_message("beta's"),
            actor=services.Actor("apikey", "beta", tenant="key:beta", restricted=True),
            skill="approval",
        )
        # the next change it hears is its own task's (its tenant's counts come beside it:
        # CUSTOM taskdeck.counts, which name no task)
        while (seen := json.loads(ws.recv(timeout=15)))["type"] == "CUSTOM":
            assert seen["name"] == "taskdeck.counts" and mine.id not in json.dumps(seen)
        assert seen["type"] == "STATE_DELTA"
        assert all(theirs.id in op["path"] for op in seen["delta"]), seen
        assert mine.id not in json.dumps(seen)


def test_a_write_only_key_gets_receipts_not_contents(asgi_server, transactional_db):
    """Finding 8: a key without `read` learns that its write went through and the task's
    state, not the task's history, artifacts, metadata or messages; streams need `read`."""
    _, writer = api_keys.create_key("alpha-writer", ["write"], owner="alpha")
    task = alphas("working")
    services.emit_text(task.id, "the secret plan", actor=AGENT)
    with local_http(base_url=asgi_server, timeout=30) as http:
        for method, headers in (("tasks/cancel", {}),):
            got = call(http, writer, method, {"id": task.id}, headers, False)["result"]
            assert got["status"]["state"] == "canceled" and got["history"] == []
            assert "the secret plan" not in json.dumps(got) and "alpha's work" not in json.dumps(
                got
            )
        sent = call(
            http,
            writer,
            "SendMessage",
            {
                "message": {"role": "ROLE_USER", "messageId": "w1", "parts": [{"text": "new job"}]},
                "configuration": {"returnImmediately": True},
            },
            V10,
            False,
        )["result"]
        assert sent["task"]["status"]["state"] and "new job" not in json.dumps(sent)
        stream = call(http, writer, "message/stream", {"message": msg("x")}, {}, True)
        assert stream["error"]["data"]["requiredScope"] == "read"
