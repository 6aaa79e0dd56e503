"""The official a2a-sdk 1.3.0 client against the live Taskdeck (issue 4, "Done when" 1).

Real everything: Daphne serving the ASGI app, db_worker and scheduler processes running the
agents, and the SDK's own client (create_client → JsonRpcTransport, A2A 1.0) in a subprocess
from .venv-interop, authenticating with one of our API keys. What the tests assert is what a
user of the SDK sees: its enum names, its event payloads, the exceptions it raises.

The oracle for "nothing lost, in order" is the task's TaskEvent log, turned into the stream
events a client should get by `logged()` below, straight from the rows (not through the
streaming code under test); and a full re-read with GetTask at the end.
"""

from __future__ import annotations

import uuid

import pytest

from a2a import services
from a2a.models import Artifact, Message, Task, TaskEvent
from a2a.protocol.stream import STATUS_KINDS
from a2a.protocol.wire10 import STATE_10
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_for, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)

RESULTS = "batch-results"  # the batch agent's artifact


# --- what the SDK showed, and what the log says it should have shown ----------------------


def items(parts: list[dict]) -> list[int]:
    """Batch item numbers of data parts (the SDK's Struct turns 3 into 3.0)."""
    return [int(p["data"]["item"]) for p in parts if "data" in p]


def sig(ev: dict) -> tuple:
    """The part of a stream event that must match the log."""
    if ev["kind"] == "status_update":
        return ("status", ev["state"], ev.get("text", ""))
    if ev["kind"] == "artifact_update":
        art = ev["artifact"]
        return ("artifact", art["artifact_id"], tuple(items(art["parts"])), ev["append"])
    return (ev["kind"],)


def logged(task_id: str, sdk_states: set[str]) -> list[tuple]:
    """The task's TaskEvent log as the `sig`s of the stream events an SDK client should see.
    An artifact event added the parts from its partsFrom up to the next append's partsFrom.
    States the SDK's enum lacks are shown as the SDK shows them (TASK_STATE_UNSPECIFIED)."""
    rows = list(TaskEvent.objects.filter(task_id=task_id).order_by("id"))
    parts = {a.artifact_id: a.parts for a in Artifact.objects.filter(task_id=task_id)}
    messages = {m.seq: m for m in Message.objects.filter(task_id=task_id)}
    out: list[tuple] = []
    for i, e in enumerate(rows):
        if e.kind == "artifact_added":
            aid, start = e.data["artifactId"], e.data.get("partsFrom", 0)
            later = [
                n.data.get("partsFrom", 0)
                for n in rows[i + 1 :]
                if n.kind == "artifact_added" and n.data["artifactId"] == aid
            ]
            end = later[0] if later else len(parts[aid])
            added = tuple(items(parts[aid][start:end]))
            out.append(("artifact", aid, added, bool(e.data.get("append"))))
        elif e.kind in STATUS_KINDS or (
            e.kind == "message_added" and e.data.get("role") == "agent"
        ):
            msg = messages.get(e.data.get("messageSeq"))
            text = ""
            if msg is not None and msg.role == "agent":
                text = "".join(p.get("text", "") for p in msg.parts if p.get("kind") == "text")
            state = STATE_10[e.to_state]
            out.append(("status", state if state in sdk_states else "TASK_STATE_UNSPECIFIED", text))
    return out


def artifact_view(snapshot: dict | None, events: list[dict]) -> dict[str, list[int]]:
    """A client's artifacts after applying the events to the snapshot, as A2A defines it:
    append=false replaces the artifact, append=true adds the parts to it."""
    view = {a["artifact_id"]: items(a["parts"]) for a in (snapshot or {}).get("artifacts", [])}
    for ev in events:
        if ev["kind"] == "artifact_update":
            art = ev["artifact"]
            new = items(art["parts"])
            view[art["artifact_id"]] = (
                [*view.get(art["artifact_id"], []), *new] if ev["append"] else new
            )
    return view


def states(events: list[dict]) -> list[str]:
    return [e["state"] for e in events if e["kind"] in ("task", "status_update")]


@pytest.fixture
def sdk_states(sdk_card) -> set[str]:
    """The TaskState names the SDK's enum knows (asked of the SDK itself)."""
    return set(sdk_card["task_states"])


# --- the tests --------------------------------------------------------------------------------


def test_the_sdk_picks_the_1_0_json_rpc_interface_from_the_card(runtime, sdk_card, asgi_server):
    # (`runtime` first, only so that the workers boot while the SDK reads the card)
    card = sdk_card
    assert card["sdk_version"] == "1.3.0"
    assert card["transport"] == "JsonRpcTransport"  # not the 0.3 compat transport
    assert card["url"] == f"{asgi_server}/a2a/"
    assert card["interfaces"] == [
        {"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": f"{asgi_server}/a2a/"}
    ]
    assert card["streaming"] is True  # else send_message would not stream


def test_a_blocking_send_to_the_tck_agent_completes(sdk, settle):
    (ev,) = sdk.events(
        "send",
        text="hello",
        message_id=f"tck-complete-task-{uuid.uuid4()}",
        metadata={"skill": "tck"},
    )
    settle(ev["task_id"])
    # SendMessage blocked until the agent settled: the one answer is the finished task
    assert ev["kind"] == "task" and ev["state"] == "TASK_STATE_COMPLETED"
    assert ev["text"] == "Hello from TCK"
    assert ev["message"]["role"] == "ROLE_AGENT"
    task = Task.objects.get(pk=ev["task_id"])
    assert task.skill == "tck" and task.state == "completed"
    assert task.context_id == ev["context_id"]


def test_the_sdk_sends_the_bearer_token_and_a_wrong_one_is_refused(sdk, api_key):
    before = Task.objects.count()
    lines = sdk.run("send", token="not-a-key", metadata={"skill": "tck"})
    assert lines[0]["error"] == "A2AClientError" and "HTTP Error 401" in lines[0]["message"]
    assert Task.objects.count() == before


def test_stream_a_batch_to_completion(sdk, settle, sdk_states):
    events = sdk.events("stream", text="go", metadata={"skill": "batch", "items": 3})
    task_id = settle(events[0]["task_id"])
    first, rest = events[0], events[1:]
    assert first["kind"] == "task"
    assert first["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert {e["task_id"] for e in events} == {task_id}
    assert {e["context_id"] for e in events} == {first["context_id"]}
    # in order, ending with the terminal update (the server closed the stream after it)
    assert states(events)[-1] == "TASK_STATE_COMPLETED" and rest[-1]["kind"] == "status_update"
    assert "TASK_STATE_WORKING" in states(rest)
    assert rest[-1]["text"] == "Processed 3 items."
    # the artifacts a client builds from the events are the task's artifacts
    assert items(Artifact.objects.get(task_id=task_id).parts) == [0, 1, 2]
    assert artifact_view(first, rest) == {RESULTS: [0, 1, 2]}, [sig(e) for e in events]
    # every event of the log after the first snapshot, in log order, nothing else
    log = logged(task_id, sdk_states)
    assert [sig(e) for e in rest] == log[len(log) - len(rest) :]


def test_get_a_task_and_an_unknown_one(sdk, start):
    task = start("batch", items=2)
    wait_state(task.id, "completed")
    found, missing = sdk.steps(
        ("get", {"task_id": task.id, "history_length": 1}), ("get", {"task_id": "no-such-task"})
    )
    ev = found[0]["event"]
    assert ev["kind"] == "task" and ev["task_id"] == task.id
    assert ev["state"] == "TASK_STATE_COMPLETED" and ev["text"] == "Processed 2 items."
    assert ev["context_id"] == task.context_id and ev["history"] == 1
    assert artifact_view(ev, []) == {RESULTS: [0, 1]}
    assert missing[0]["error"] == "TaskNotFoundError"


def test_cancel_a_running_batch(sdk, settle):
    (ev,) = sdk.events(
        "send",
        text="go",
        metadata={"skill": "batch", "items": 40, "pace": 4},
        return_immediately=True,  # configuration.returnImmediately: answer before it runs
    )
    task_id = settle(ev["task_id"])
    assert ev["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    wait_for(lambda: Artifact.objects.filter(task_id=task_id).exists(), what="a first item")
    (canceled,) = sdk.events("cancel", task_id=task_id)
    assert canceled["task_id"] == task_id and canceled["state"] == "TASK_STATE_CANCELED"
    wait_idle(task_id)
    assert Task.objects.get(pk=task_id).state == "canceled"
    assert len(Artifact.objects.get(task_id=task_id).parts) < 40  # it really stopped
    # what an SDK user gets for a second cancel, a stream of the ended task, a re-read
    again, stream, get = sdk.steps(
        ("cancel", {"task_id": task_id}),
        ("subscribe", {"task_id": task_id}),
        ("get", {"task_id": task_id}),
    )
    assert again[0]["error"] == "TaskNotCancelableError"
    assert stream[0]["error"] == "UnsupportedOperationError"
    assert get[0]["event"]["state"] == "TASK_STATE_CANCELED"


def test_resubscribe_after_a_disconnect_loses_nothing(sdk, start, sdk_states):
    n = 16
    task = start("batch", items=n, pace=12)  # 0.3 s an item: seconds left to resubscribe
    wait_state(task.id, "working")
    first = sdk.spawn("subscribe", task_id=task.id, max_events=3)
    lines = first.finish()
    assert lines[-2]["disconnected"] is True and lines[-1] == {"done": True}
    one = first.events()
    assert len(one) == 3 and one[0]["kind"] == "task" and lines[-2]["last"] == one[-1]
    seen_by_one = artifact_view(one[0], one[1:]).get(RESULTS, [])
    assert seen_by_one == list(range(len(seen_by_one))), (
        "the first stream itself doubled or skipped items",
        artifact_view(one[0], []),
        [sig(e) for e in one[1:]],
    )
    # while nobody listens, the task goes on: wait until it did two more items
    wait_for(
        lambda: len(Artifact.objects.get(task_id=task.id).parts) >= len(seen_by_one) + 2,
        what="progress while disconnected",
    )
    assert Task.objects.get(pk=task.id).state == "working"
    two, reread = sdk.steps(("subscribe", {"task_id": task.id}), ("get", {"task_id": task.id}))
    assert two[-1] == {"done": True}, two
    two = [line["event"] for line in two if "event" in line]
    snapshot, rest = two[0], two[1:]
    # the second stream starts with the task as it is now, then runs to the end
    assert snapshot["kind"] == "task" and snapshot["state"] == "TASK_STATE_WORKING"
    assert states(two)[-1] == "TASK_STATE_COMPLETED"
    in_snapshot = artifact_view(snapshot, []).get(RESULTS, [])
    missed = in_snapshot[len(seen_by_one) :]
    assert in_snapshot[: len(seen_by_one)] == seen_by_one and len(missed) >= 2
    # together nothing is lost: the client's view is the finished task's
    assert artifact_view(snapshot, rest) == {RESULTS: list(range(n))}, [sig(e) for e in rest]
    final = reread[0]["event"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    assert artifact_view(final, []) == {RESULTS: list(range(n))}
    # and each stream is a gapless run of the log, in order
    log = logged(task.id, sdk_states)
    assert [sig(e) for e in rest] == log[len(log) - len(rest) :]
    sigs_one = [sig(e) for e in one[1:]]
    assert any(log[i : i + len(sigs_one)] == sigs_one for i in range(len(log))), (
        f"{sigs_one} is not a run of {log}"
    )


def test_a_pause_and_a_resume_show_on_the_stream(sdk, start, sdk_states):
    n = 10
    task = start("batch", items=n, pace=12)  # 0.3 s an item
    wait_state(task.id, "working")
    live = sdk.spawn("subscribe", task_id=task.id)
    snapshot = live.until(lambda e: True)
    assert snapshot["kind"] == "task" and snapshot["state"] == "TASK_STATE_WORKING"
    live.until(lambda e: e["kind"] == "artifact_update")  # the run is live on the stream

    outcome = services.pause_task(task.id, actor=CLIENT, reason="interop check")
    paused = live.until(lambda e: "handle" in e.get("metadata", {}))
    # The SDK's TaskState enum has no paused member: protobuf's lenient parse drops the
    # unknown name, so the SDK user sees TASK_STATE_UNSPECIFIED (0) and the RFC fields.
    assert paused["kind"] == "status_update" and paused["task_id"] == task.id
    assert paused["state"] == "TASK_STATE_UNSPECIFIED" and paused["state_value"] == 0
    assert "TASK_STATE_PAUSED_BY_CLIENT" not in sdk_states
    meta = paused["metadata"]
    assert meta["handle"] == outcome.suspension.handle and meta["initiator"] == "client"
    assert meta["reason"] == "interop check" and meta["pausedAt"]
    wait_idle(task.id)  # the worker let go: the task is really paused
    (during,) = sdk.events("get", task_id=task.id)
    assert during["state"] == "TASK_STATE_UNSPECIFIED"
    assert during["metadata"]["pause"]["handle"] == outcome.suspension.handle
    assert live.proc.poll() is None, "the stream of a paused task must stay open"

    services.resume_task(task.id, actor=CLIENT)
    resumed = live.until(lambda e: e.get("metadata", {}).get("cause") == "explicit_resume")
    assert resumed["kind"] == "status_update" and resumed["state"] == "TASK_STATE_WORKING"
    assert "paused-by-client" in resumed["metadata"]["previousState"].lower().replace("_", "-")
    assert resumed["metadata"]["resumedAt"]
    live.finish()
    events = live.events()
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    order = [events.index(e) for e in (snapshot, paused, resumed)]
    assert order == sorted(order)
    # nothing lost across the pause: the client's artifacts are the task's
    assert artifact_view(snapshot, events[1:]) == {RESULTS: list(range(n))}, (
        artifact_view(snapshot, []),
        [sig(e) for e in events[1:]],
    )
    log = logged(task.id, sdk_states)
    assert [sig(e) for e in events[1:]] == log[len(log) - len(events) + 1 :]
