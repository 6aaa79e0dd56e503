"""Contexts belong to their tenant (issue 32; docs/protocol.md, "Contexts belong to their
tenant"): a contextId is the tenant's whose task (or ACP session) used it first. Another
tenant's message into it is refused on every door with the same words whoever owns it,
naming nothing of the owner, and nothing is written; the readers that gather a context's
tasks (an AG-UI thread, an ACP session's replay) show its tenant's tasks only. gRPC's
refusal is tested with the gRPC binding (tests/grpc_door/test_grpc_binding.py)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from django.db import connection

from a2a import api_keys, services
from a2a.acp_door import sessions
from a2a.acp_door.updates import read_facts
from a2a.errors import ValidationFailed
from a2a.models import Context, Task
from a2a.services.contexts import NOT_YOURS
from agui.models import Interrupt
from tests.conftest import APPROVAL_REQUEST, local_http, user_message

pytestmark = pytest.mark.django_db(transaction=True)
ALPHA = services.Actor("apikey", "alpha", tenant="key:alpha", restricted=True)
BETA = services.Actor("apikey", "beta", tenant="key:beta", restricted=True)
OPS = services.Actor("apikey", "ops", tenant="key:ops")  # an operator key: not restricted
AGENT = services.Actor("agent", "test")


@pytest.fixture
def keys(transactional_db) -> dict[str, str]:
    made = {
        "alpha": api_keys.create_key("alpha", ["read", "write", "agent"]),
        "alpha-2": api_keys.create_key("alpha-ci", ["read", "write"], owner="alpha"),
        "beta": api_keys.create_key("beta", ["read", "write", "agent"]),
        "operator": api_keys.create_key("ops", ["read", "write", "operator"]),
    }
    return {role: token for role, (_, token) in made.items()}


def alphas(text: str = "alpha's secret plan") -> Task:
    return services.create_task(user_message(text), actor=ALPHA, skill="approval")


# --- the three HTTP sends, each answering (refused?, the error's words, the whole body) ---


def _jsonrpc_03(http: httpx.Client, token: str, context_id: str, n: int) -> tuple[bool, str, str]:
    message = {
        "role": "user",
        "messageId": f"m03-{n}",
        "contextId": context_id,
        "parts": [{"kind": "text", "text": "beta was here"}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    answer = http.post("/a2a/", json=body, headers={"Authorization": f"Bearer {token}"}).json()
    error = answer.get("error")
    if error is None:
        return False, "", json.dumps(answer)
    assert error["code"] == -32602 and list(error["data"]["errors"]) == ["message.contextId"]
    return True, error["data"]["detail"], json.dumps(answer)


def _jsonrpc_10(http: httpx.Client, token: str, context_id: str, n: int) -> tuple[bool, str, str]:
    message = {
        "role": "ROLE_USER",
        "messageId": f"m10-{n}",
        "contextId": context_id,
        "parts": [{"text": "beta was here"}],
    }
    params = {"message": message, "configuration": {"returnImmediately": True}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    answer = http.post("/a2a/", json=body, headers=headers).json()
    error = answer.get("error")
    if error is None:
        return False, "", json.dumps(answer)
    assert error["code"] == -32602, answer
    info, bad = error["data"]
    assert info["reason"] == "INVALID_PARAMS"
    assert [v["field"] for v in bad["fieldViolations"]] == ["message.contextId"]
    return True, error["message"], json.dumps(answer)


def _rest(http: httpx.Client, token: str, context_id: str, n: int) -> tuple[bool, str, str]:
    message = {
        "role": "ROLE_USER",
        "messageId": f"mrest-{n}",
        "contextId": context_id,
        "parts": [{"text": "beta was here"}],
    }
    body = {"message": message, "configuration": {"returnImmediately": True}}
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    response = http.post("/a2a/rest/message:send", json=body, headers=headers)
    if response.status_code == 200:
        return False, "", response.text
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["reason"] == "INVALID_PARAMS"
    return True, error["message"], response.text


BINDINGS = {"jsonrpc-0.3": _jsonrpc_03, "jsonrpc-1.0": _jsonrpc_10, "http+json": _rest}


@pytest.mark.parametrize("binding", list(BINDINGS))
def test_another_tenants_context_is_refused_the_same_whoever_owns_it(
    asgi_server, keys, unchanged, binding
):
    send = BINDINGS[binding]
    mine = alphas()
    operators = services.create_task(user_message("ops' plan"), actor=OPS, skill="approval")
    with local_http(base_url=asgi_server, timeout=30) as http:
        with unchanged():
            refused, words, body = send(http, keys["beta"], mine.context_id, 1)
            assert refused, body
            # the same refusal for a context of another owner: it tells nothing of whose
            _, words_ops, _ = send(http, keys["beta"], operators.context_id, 2)
        assert NOT_YOURS in words
        assert words.replace(mine.context_id, "C") == words_ops.replace(operators.context_id, "C")
        for secret in ("alpha", "secret plan", mine.id):
            assert secret not in body, secret
        # the owner's other key, and an operator key, may add to it
        for role in ("alpha-2", "operator"):
            refused, _, body = send(http, keys[role], mine.context_id, 3)
            assert not refused, (role, body)
    in_context = Task.objects.filter(context_id=mine.context_id)
    assert sorted(in_context.values_list("owner", flat=True)) == [
        "key:alpha",
        "key:alpha",
        "key:ops",
    ]


def test_a_new_context_a_client_names_is_its_tenants_from_then_on(asgi_server, keys, unchanged):
    with local_http(base_url=asgi_server, timeout=30) as http:
        refused, _, body = _jsonrpc_03(http, keys["beta"], "beta-chose-this-context", 1)
        assert not refused, body
        assert Context.objects.get(pk="beta-chose-this-context").tenant == "key:beta"
        with unchanged():
            refused, _, _ = _rest(http, keys["alpha"], "beta-chose-this-context", 2)
        assert refused
        refused, _, body = _jsonrpc_10(http, keys["beta"], "beta-chose-this-context", 3)
        assert not refused, body
    owners = Task.objects.filter(context_id="beta-chose-this-context").values_list("owner")
    assert sorted(owners) == [("key:beta",), ("key:beta",)]


@pytest.mark.postgres
def test_two_tenants_racing_to_start_one_context_end_with_one_owner():
    """Twenty sends, half from each tenant, all naming the same new contextId at once: one
    tenant owns it, every send of the other is refused, and no task of the loser is in it."""
    n = 20
    barrier = threading.Barrier(n)
    outcomes: list[tuple[str, str]] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        actor = (ALPHA, BETA)[i % 2]
        try:
            barrier.wait()
            services.create_task(
                user_message(f"race {i}"), actor=actor, skill="approval", context_id="raced"
            )
            result = "made"
        except ValidationFailed as exc:
            result = "refused" if list(exc.errors) == ["message.contextId"] else repr(exc)
        except Exception as exc:  # recorded, then asserted on
            result = f"unexpected {exc!r}"
        finally:
            connection.close()
        with lock:
            outcomes.append((actor.tenant, result))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    owner = Context.objects.get(pk="raced").tenant
    loser = {"key:alpha": "key:beta", "key:beta": "key:alpha"}[owner]
    assert sorted(outcomes) == sorted([(owner, "made")] * 10 + [(loser, "refused")] * 10)
    assert set(Task.objects.filter(context_id="raced").values_list("owner", flat=True)) == {owner}


# --- the readers: AG-UI threads and ACP sessions ---------------------------------------------


def _smuggle(context_id: str, text: str) -> Task:
    """A task of tenant beta inside `context_id`, as one could get there before contexts
    were owned (the row is moved by hand: no service would put it there now)."""
    task = services.create_task(user_message(text), actor=BETA, skill="approval")
    Task.objects.filter(pk=task.id).update(context_id=context_id)
    return Task.objects.get(pk=task.id)


def _agui_run(http: httpx.Client, token: str, run_id: str, **body: Any) -> list[dict]:
    """An AG-UI run of thread "ops-thread", read up to its snapshot (or its refusal)."""
    payload = {
        "threadId": "ops-thread",
        "runId": run_id,
        "messages": [],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"skill": "approval"},
        **body,
    }
    events = []
    with http.stream(
        "POST", "/agui/run", json=payload, headers={"Authorization": f"Bearer {token}"}
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] in ("STATE_SNAPSHOT", "RUN_ERROR"):
                    break
    return events


def test_an_agui_thread_is_neither_blocked_nor_shown_by_another_tenants_task(
    asgi_server, keys, unchanged
):
    """Before: beta, knowing alpha's thread context, added an approval task to it, and
    alpha's runs were refused (`interrupt_pending`), its resume `interrupt_uncovered`
    naming beta's task. Now beta's send is refused; and a task of beta's already in the
    context (older data) neither blocks alpha's runs nor shows in its snapshots."""
    with local_http(base_url=asgi_server, timeout=30) as http:
        said = [{"id": "u1", "role": "user", "content": "Roll out 2.14"}]
        first = _agui_run(http, keys["alpha"], "run-1", messages=said)
        assert [e["type"] for e in first] == ["RUN_STARTED", "STATE_SNAPSHOT"], first
        mine = Task.objects.get(origin="agui")
        with unchanged():
            refused, _, body = _jsonrpc_03(http, keys["beta"], mine.context_id, 1)
        assert refused, body
        theirs = _smuggle(mine.context_id, "beta's approval")
        services.start_task(theirs.id, actor=AGENT)
        services.request_input(theirs.id, actor=AGENT, explanation="b?", request=APPROVAL_REQUEST)
        services.start_task(mine.id, actor=AGENT)
        services.request_input(mine.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
        interrupt = Interrupt.objects.get(task_id=mine.id, pending=True)
        resume = [
            {
                "interruptId": interrupt.interrupt_id,
                "status": "resolved",
                "payload": {"decision": "approve"},
            }
        ]
        answered = _agui_run(http, keys["alpha"], "run-2", resume=resume)
    assert [e["type"] for e in answered][-1] == "STATE_SNAPSHOT", answered
    snapshot = answered[-1]["snapshot"]["view"]
    assert set(snapshot["tasks"]) == {mine.id}
    seen = json.dumps(answered)
    assert theirs.id not in seen and "beta" not in seen
    assert Task.objects.get(pk=theirs.id).state == "input-required"  # untouched


def test_an_acp_sessions_context_is_held_from_its_opening_and_replays_its_tenants_tasks():
    """The session's context is alpha's as soon as the session opens (its first task comes
    with the first prompt): beta cannot take it in between. What a session/load replays
    (updates.read_facts) holds alpha's tasks only, even with a task of beta's in it."""
    session = sessions.open_session("/work/shop", actor=ALPHA, skill="approval")
    assert Context.objects.get(pk=session.context_id).tenant == "key:alpha"
    with pytest.raises(ValidationFailed) as refused:
        services.receive_message(
            user_message("beta was here"), actor=BETA, context_id=session.context_id
        )
    assert refused.value.errors == {"message.contextId": [NOT_YOURS]}
    assert not Task.objects.filter(context_id=session.context_id).exists()
    prompted = sessions.prompt(session, [{"kind": "text", "text": "alpha's ask"}], actor=ALPHA)
    theirs = _smuggle(session.context_id, "beta's injected text")
    services.start_task(theirs.id, actor=AGENT)
    services.emit_text(theirs.id, "beta's agent says hi", actor=AGENT)
    facts = read_facts(session.context_id, {}, 0, owner=session.owner)
    assert {f.task.id for f in facts} == {prompted.task.id}
    texts = json.dumps([f.message.parts for f in facts if f.message is not None])
    assert "alpha's ask" in texts and "beta" not in texts
    cursors, _ = sessions.attach_point(session)
    assert set(cursors) == {prompted.task.id}


def test_a_context_whose_tasks_came_around_the_services_is_its_oldest_tasks_tenants():
    """Tasks written by bulk SQL or a restore have no Context row: the context is the
    tenant's of its oldest task, as the migration decides, not the first caller's."""
    mine = alphas()
    Context.objects.filter(pk=mine.context_id).delete()  # as a bulk load leaves it
    with pytest.raises(ValidationFailed):
        services.create_task(
            user_message("beta"), actor=BETA, skill="approval", context_id=mine.context_id
        )
    services.create_task(
        user_message("more"), actor=ALPHA, skill="approval", context_id=mine.context_id
    )
    assert Context.objects.get(pk=mine.context_id).tenant == "key:alpha"
