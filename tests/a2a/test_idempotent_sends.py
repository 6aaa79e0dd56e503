"""Idempotent sends (issue 13, item 4; docs/protocol.md "Idempotent sends"): the same
messageId from the same caller (tenant) within TASKDECK IDEMPOTENCY_HOURS returns the first
delivery's task and writes nothing — no task, message, event, job or push config — on every
A2A send method; different parts under a used messageId are refused (-32602); another
tenant's messageIds are its own; an expired receipt does not count."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from a2a import api_keys, services
from a2a.errors import NotAllowedNow
from a2a.event_kinds import EventKind
from a2a.models import Message, MessageReceipt, Task, TaskEvent
from a2a.push.models import PushConfig
from a2a.services import receipts
from tests.a2a.test_races import run_together
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, db_state, local_async_http

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}
N = 20


def message03(text: str = "deploy 2.14", **extra: Any) -> dict:
    return {
        "role": "user",
        "messageId": f"m-{uuid.uuid4()}",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def message10(text: str = "deploy 2.14", **extra: Any) -> dict:
    return {
        "role": "ROLE_USER",
        "messageId": f"m-{uuid.uuid4()}",
        "parts": [{"text": text}],
        **extra,
    }


def everything() -> dict[str, Any]:
    """All a send could write: task data, receipts, queued jobs, push configs."""
    return {
        **db_state(),
        "receipts": list(MessageReceipt.objects.order_by("id").values()),
        "jobs": DBTaskResult.objects.count(),
        "push": list(PushConfig.objects.order_by("id").values()),
    }


@contextmanager
def nothing_written() -> Iterator[None]:
    before = everything()
    yield
    assert everything() == before, "a repeated or refused send wrote something"


# --- message/send and SendMessage ------------------------------------------------------------


def send03(rpc, message: dict, **configuration: Any) -> dict:
    params: dict[str, Any] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    return rpc.result("message/send", params)


def send10(rpc, message: dict, **configuration: Any) -> dict:
    params = {"message": message, "configuration": {"returnImmediately": True, **configuration}}
    return rpc.result("SendMessage", params, headers=V10)["task"]


SENDS = {"message/send": (send03, message03), "SendMessage": (send10, message10)}


@pytest.mark.parametrize("method", SENDS)
def test_the_same_message_twice_is_one_task(rpc, method):
    send, message = SENDS[method]
    msg = message()
    first = send(rpc, msg)
    jobs = DBTaskResult.objects.count()
    assert jobs >= 1  # the first send queued the agent's run
    with nothing_written():
        again = send(rpc, msg)
    assert again["id"] == first["id"] and again["contextId"] == first["contextId"]
    assert Task.objects.count() == 1 and Message.objects.count() == 1
    assert TaskEvent.objects.filter(kind=EventKind.CREATED).count() == 1
    receipt = MessageReceipt.objects.get()
    assert (receipt.tenant, receipt.message_id, receipt.task_id) == (
        "key:test-client",
        msg["messageId"],
        first["id"],
    )


def test_a_repeat_answers_the_task_as_it_is_now(rpc):
    msg = message03()
    first = send03(rpc, msg)
    services.start_task(first["id"], actor=AGENT)
    services.emit_text(first["id"], "on it", actor=AGENT)
    with nothing_written():
        again = send03(rpc, msg, historyLength=1)
    assert again["status"]["state"] == "working"
    assert [m["parts"][0]["text"] for m in again["history"]] == ["on it"]


def test_a_repeated_blocking_send_answers_like_the_first_would(rpc):
    """The agent finished while the client's answer was lost: the retry (blocking) gets the
    finished task at once, as a blocking send that waited would have."""
    msg = message03()
    first = send03(rpc, msg)
    services.start_task(first["id"], actor=AGENT)
    services.complete_task(first["id"], actor=AGENT, text="deployed")
    with nothing_written():
        again = send03(rpc, msg, blocking=True)
    assert again["id"] == first["id"] and again["status"]["state"] == "completed"
    assert again["status"]["message"]["parts"] == [{"kind": "text", "text": "deployed"}]


def test_keys_differing_in_spacing_and_order_are_the_same_content(rpc):
    msg = message03(parts=[{"kind": "data", "data": {"a": 1, "b": [1, 2]}}])
    first = send03(rpc, msg)
    reordered = {**msg, "parts": [{"data": {"b": [1, 2], "a": 1}, "kind": "data"}]}
    with nothing_written():
        assert send03(rpc, reordered)["id"] == first["id"]


def test_a_message_to_a_task_twice_is_appended_once(rpc, make_task):
    task = make_task("working")
    msg = message03("also check the logs", taskId=task.id)
    send03(rpc, msg)
    with nothing_written():
        again = send03(rpc, msg)
    assert again["id"] == task.id
    assert task.messages.filter(message_id=msg["messageId"]).count() == 1
    assert task.events.filter(kind=EventKind.MESSAGE_ADDED).count() == 1


def test_an_answer_twice_answers_once(rpc, make_task):
    """The first answer put the task back to work; the retry must not be refused as a late
    answer (-32004), nor answer the next request."""
    task = make_task("input-required")
    request_id = task.input_request["requestId"]
    data = {
        "type": "a2a.input.response",
        "requestId": request_id,
        "values": {"decision": "approve"},
    }
    msg = message03(taskId=task.id, parts=[{"kind": "data", "data": data}])
    assert send03(rpc, msg)["status"]["state"] == "working"
    services.request_input(task.id, actor=AGENT, explanation="Again?", request=APPROVAL_REQUEST)
    with nothing_written():
        again = send03(rpc, msg)
    assert again["status"]["state"] == "input-required"  # the second request stays open
    assert task.events.filter(kind=EventKind.INPUT_PROVIDED).count() == 1


def test_an_inline_push_config_is_not_attached_twice(rpc):
    msg = message03()
    hook = {"url": "https://example.com/webhook"}
    first = send03(rpc, msg, pushNotificationConfig=hook)
    assert PushConfig.objects.filter(task_id=first["id"]).count() == 1
    with nothing_written():
        assert send03(rpc, msg, pushNotificationConfig=hook)["id"] == first["id"]


# --- the same messageId, other content; other callers; the window -----------------------------


@pytest.mark.parametrize("method", SENDS)
def test_the_same_id_with_other_parts_is_refused(rpc, method):
    send, message = SENDS[method]
    msg = message()
    send(rpc, msg)
    changed = {**msg, "parts": [{**msg["parts"][0], "text": "deploy 2.15"}]}
    params = {"message": changed, "configuration": {"returnImmediately": True}}
    headers = V10 if method == "SendMessage" else {}
    with nothing_written():
        error = rpc.error(method, params, headers=headers)
    assert error["code"] == -32602
    assert "message.messageId" in json.dumps(error), error


def test_the_same_id_with_other_parts_to_a_task_is_refused(rpc, make_task):
    task = make_task("working")
    msg = message03("first", taskId=task.id)
    send03(rpc, msg)
    other = {**msg, "parts": [{"kind": "text", "text": "second"}]}
    with nothing_written():
        error = rpc.error("message/send", {"message": other})
    assert error["code"] == -32602 and "message.messageId" in error["data"]["errors"]


def test_another_tenant_uses_the_same_id_for_its_own_task(rpc):
    msg = message03()
    mine = send03(rpc, msg)
    _, token = api_keys.create_key("other-client", ["read", "write"])
    theirs = rpc.result("message/send", {"message": msg}, token=token)
    assert theirs["id"] != mine["id"]
    assert Task.objects.get(pk=theirs["id"]).owner == "key:other-client"
    assert Task.objects.count() == 2 and MessageReceipt.objects.count() == 2


def test_another_key_of_the_same_tenant_repeats(rpc):
    """The caller is the tenant: a client's keys share their tasks, so a retry through its
    second key must not start the work again."""
    msg = message03()
    first = send03(rpc, msg)
    _, token = api_keys.create_key("test-client-2", ["read", "write"], owner="test-client")
    with nothing_written():
        again = rpc.result("message/send", {"message": msg}, token=token)
    assert again["id"] == first["id"]


def test_after_the_window_the_same_id_is_a_new_message(rpc):
    msg = message03()
    first = send03(rpc, msg)
    MessageReceipt.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    again = send03(rpc, msg)
    assert again["id"] != first["id"] and Task.objects.count() == 2
    assert MessageReceipt.objects.get().task_id == again["id"]  # the old receipt made way
    with nothing_written():
        assert send03(rpc, msg)["id"] == again["id"]  # and the new one counts


def test_within_a_shorter_window_the_id_still_counts(rpc):
    msg = message03()
    first = send03(rpc, msg)
    MessageReceipt.objects.update(created_at=timezone.now() - timedelta(hours=23))
    with nothing_written():
        assert send03(rpc, msg)["id"] == first["id"]


# --- streams ------------------------------------------------------------------------------------


@contextmanager
def open_stream(rpc, method: str, message: dict) -> Iterator[Iterator[dict]]:
    """A send stream, as an iterator over its JSON-RPC results (frame by frame); the
    connection closes when the block ends."""
    headers = {"Authorization": f"Bearer {rpc.token}", **(V10 if method[0].isupper() else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    with rpc.http.stream("POST", "/a2a/", json=body, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")

        def results() -> Iterator[dict]:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    frame = json.loads(line[6:])
                    assert "error" not in frame, frame
                    yield frame["result"]

        yield results()


STREAMS = {
    "message/stream": (message03, lambda r: r, lambda r: r["status"]["state"]),
    "SendStreamingMessage": (
        message10,
        lambda r: r.get("task") or r.get("statusUpdate"),
        lambda r: r["status"]["state"].removeprefix("TASK_STATE_").lower(),
    ),
}


@pytest.mark.parametrize("method", STREAMS)
def test_a_repeated_stream_streams_the_first_task_from_now(rpc, method):
    message, unwrap, state = STREAMS[method]
    msg = message()
    with open_stream(rpc, method, msg) as frames:
        first = unwrap(next(frames))
    services.start_task(first["id"], actor=AGENT)
    before = everything()
    with open_stream(rpc, method, msg) as frames:
        snapshot = unwrap(next(frames))  # the task as it is now, first
        assert everything() == before, "a repeated stream wrote something"
        assert snapshot["id"] == first["id"] and state(snapshot) == "working"
        services.complete_task(first["id"], actor=AGENT, text="done")
        update = unwrap(next(frames))  # then what happens to it
        assert update["taskId"] == first["id"] and state(update) == "completed"
    assert Task.objects.count() == 1 and Message.objects.filter(role="user").count() == 1


def test_a_stream_then_a_send_of_the_same_message_is_one_task(rpc):
    msg = message03()
    with open_stream(rpc, "message/stream", msg) as frames:
        first = next(frames)
    with nothing_written():
        assert send03(rpc, msg)["id"] == first["id"]


# --- at the same time ---------------------------------------------------------------------------


def test_concurrent_http_sends_of_one_message_make_one_task(rpc):
    """The same message sent N times at once (a client's retries overtaking each other)."""
    msg = message03()
    hook = {"url": "https://example.com/webhook"}  # the door's own transaction, too
    params = {"message": msg, "configuration": {"pushNotificationConfig": hook}}

    async def fire() -> list[dict]:
        headers = {"Authorization": f"Bearer {rpc.token}"}
        async with local_async_http(base_url=str(rpc.http.base_url), timeout=60) as client:
            answers = await asyncio.gather(
                *(
                    client.post(
                        "/a2a/",
                        json={
                            "jsonrpc": "2.0",
                            "id": i,
                            "method": "message/send",
                            "params": params,
                        },
                        headers=headers,
                    )
                    for i in range(N)
                )
            )
        return [a.json() for a in answers]

    answers = asyncio.run(fire())
    ids = Counter(a["result"]["id"] if "result" in a else str(a) for a in answers)
    assert len(ids) == 1, ids
    assert Task.objects.count() == 1 and Message.objects.count() == 1
    assert PushConfig.objects.count() == 1 and MessageReceipt.objects.count() == 1


@pytest.mark.postgres
def test_concurrent_service_sends_of_one_message_make_one_task(transactional_db):
    """PostgreSQL-only: real threads, each with its own connection, released together. The
    losers' receipt inserts wait for the winner's commit, fail, and read its receipt."""
    msg = services.IncomingMessage(
        message_id=f"m-{uuid.uuid4()}", parts=[{"kind": "text", "text": "once"}]
    )

    def send(i: int) -> str:
        delivered = services.receive_message(msg, actor=CLIENT, skill="approval")
        return f"{delivered.task.id} {'repeated' if delivered.repeated else 'first'}"

    outcomes = run_together(N, send)
    (task_id,) = {key.split()[0] for key in outcomes}
    assert Counter(key.split()[1] for key in outcomes.elements()) == {
        "first": 1,
        "repeated": N - 1,
    }, outcomes
    assert list(Task.objects.values_list("id", flat=True)) == [task_id]
    assert Message.objects.count() == 1 and TaskEvent.objects.count() == 1
    assert DBTaskResult.objects.count() == 1


@pytest.mark.postgres
def test_concurrent_appends_of_one_message_append_once(make_task):
    task = make_task("working")
    msg = services.IncomingMessage(
        message_id=f"m-{uuid.uuid4()}", parts=[{"kind": "text", "text": "once"}]
    )

    def send(i: int) -> str:
        return services.receive_message(msg, actor=CLIENT, task_id=task.id).task.id

    assert run_together(N, send) == {task.id: N}
    assert task.messages.filter(message_id=msg.message_id).count() == 1
    assert task.events.filter(kind=EventKind.MESSAGE_ADDED).count() == 1


# --- the service: what doors are told; the setting; pruning --------------------------------------


def receive(message: services.IncomingMessage, **kw: Any) -> services.Delivered:
    return services.receive_message(message, actor=CLIENT, **kw)


def text_message(text: str = "hi", message_id: str | None = None) -> services.IncomingMessage:
    return services.IncomingMessage(
        message_id=message_id or f"m-{uuid.uuid4()}", parts=[{"kind": "text", "text": text}]
    )


def test_a_repeat_tells_the_door_and_keeps_the_first_outcome(make_task):
    task = make_task("input-required")
    data = {
        "type": "a2a.input.response",
        "requestId": task.input_request["requestId"],
        "values": {"decision": "approve"},
    }
    msg = services.IncomingMessage(message_id="answer-1", parts=[{"kind": "data", "data": data}])
    first = receive(msg, task_id=task.id)
    assert (first.created, first.answered, first.repeated) == (False, True, False)
    again = receive(msg, task_id=task.id)
    assert (again.task.id, again.created, again.answered, again.repeated) == (
        task.id,
        False,
        True,
        True,
    )
    new = receive(msg2 := text_message())
    assert (new.created, new.repeated) == (True, False)
    assert (receive(msg2).created, receive(msg2).repeated) == (True, True)


def test_a_finished_conversation_task_repeats_the_task_it_started(make_task):
    """AG-UI threads and ACP sessions start a new task after the last one ended: a repeat
    names that new task, not the ended one, and starts no third."""
    ended = make_task("completed")
    msg = text_message("next")
    first = receive(msg, task_id=ended.id, after_end="new_task")
    again = receive(msg, task_id=ended.id, after_end="new_task")
    assert first.created and again.repeated and again.task.id == first.task.id != ended.id
    assert Task.objects.count() == 2


def test_a_refused_message_leaves_no_receipt(make_task):
    """Nothing is written for a refused message, so its retry is judged afresh."""
    task = make_task("paused-by-client")
    msg = text_message()
    with pytest.raises(NotAllowedNow):
        receive(msg, task_id=task.id)
    assert not MessageReceipt.objects.exists()
    services.resume_task(task.id, actor=CLIENT)
    assert receive(msg, task_id=task.id).repeated is False


def test_zero_hours_turns_idempotency_off(settings):
    settings.TASKDECK = {**settings.TASKDECK, "IDEMPOTENCY_HOURS": 0}
    msg = text_message()
    assert receive(msg).task.id != receive(msg).task.id
    assert not MessageReceipt.objects.exists()


def test_a_shorter_window_from_the_setting(settings):
    settings.TASKDECK = {**settings.TASKDECK, "IDEMPOTENCY_HOURS": 0.5}
    msg = text_message()
    first = receive(msg)
    MessageReceipt.objects.update(created_at=timezone.now() - timedelta(minutes=31))
    assert receive(msg).task.id != first.task.id


def test_prune_deletes_receipts_older_than_the_window():
    old, fresh = text_message(), text_message()
    receive(old)
    receive(fresh)
    MessageReceipt.objects.filter(message_id=old.message_id).update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    assert receipts.prune() == 1
    assert list(MessageReceipt.objects.values_list("message_id", flat=True)) == [fresh.message_id]


def test_a_deleted_task_takes_its_receipts_along():
    msg = text_message()
    first = receive(msg)
    Task.objects.filter(pk=first.task.id).delete()
    assert not MessageReceipt.objects.exists()
    assert receive(msg).repeated is False
