"""The official a2a-sdk 1.3.0 client against the live Taskdeck, over each A2A binding
(issue 4, "Done when" 1; issue 17, item 5).

Real everything: Daphne serving the ASGI app (JSON-RPC, HTTP+JSON), a `manage.py run_grpc`
process (gRPC), db_worker and scheduler processes running the agents, and the SDK's own
client in a subprocess from .venv-interop, authenticating with one of our API keys. Each
test runs once per binding (the `binding` fixture): the SDK may use that binding only
(ClientConfig.supported_protocol_bindings) and finds its interface in our 1.0 card, so
create_client builds JsonRpcTransport, RestTransport or GrpcTransport. What the tests assert
is what a user of the SDK sees: its enum names, its event payloads, the exceptions it raises.

Per binding, four tests cover what a client does: discovery (the card), a blocking send, a
streaming send and GetTask (and their errors), a cancel, and a stream it hangs up on,
resubscribes to, and sees a pause and a resume on (the pause is made through
a2a.services: what is checked is that the binding under test shows it).

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
from tests.runtime.conftest import wait_for, wait_idle

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


# Taskdeck's paused states over gRPC: the numbers of taskdeck.pause.v1.PausedTaskState in
# `status.state` (a2a/grpc_door/proto/taskdeck_pause.proto); the SDK keeps the number.
PAUSED_OVER_GRPC = {"TASK_STATE_PAUSED_BY_CLIENT": 101, "TASK_STATE_PAUSED_BY_AGENT": 102}


def shown(state: str, sdk_states: set[str], binding: str) -> tuple[str, int | None]:
    """A 1.0 state name as the SDK user sees it over `binding`: (state, state_value) as
    client_script prints them (state_value None: whatever the SDK's enum says)."""
    if state in sdk_states:
        return state, None
    if binding == "GRPC" and state in PAUSED_OVER_GRPC:
        return str(PAUSED_OVER_GRPC[state]), PAUSED_OVER_GRPC[state]
    # JSON-RPC and HTTP+JSON: the lenient ProtoJSON parse drops a name the enum lacks
    return "TASK_STATE_UNSPECIFIED", 0


def logged(task_id: str, sdk_states: set[str], binding: str) -> list[tuple]:
    """The task's TaskEvent log as the `sig`s of the stream events an SDK client should see.
    An artifact event added the parts from its partsFrom up to the next append's partsFrom.
    States the SDK's enum lacks are shown as the SDK shows them over `binding` (`shown`)."""
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
            out.append(("status", shown(STATE_10[e.to_state], sdk_states, binding)[0], text))
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
def sdk_states(sdk_cards) -> set[str]:
    """The TaskState names the SDK's enum knows (asked of the SDK itself)."""
    return set(sdk_cards["JSONRPC"][0]["event"]["task_states"])


# --- the tests --------------------------------------------------------------------------------

TRANSPORTS = {"JSONRPC": "JsonRpcTransport", "HTTP+JSON": "RestTransport", "GRPC": "GrpcTransport"}
# What the SDK raises for a key the server refuses, by binding. A2A has no error reason for
# authentication: Taskdeck answers 401 (gRPC: UNAUTHENTICATED) with reason INVALID_REQUEST,
# which the SDK's REST and gRPC transports map to InvalidRequestError; its JSON-RPC
# transport does not read the body of a non-200 answer, only its status line, so the words
# are there too (a2a/protocol/status_line.py): "HTTP Error 401: Client error '401 unknown
# or revoked API key' for url …".
REFUSED = {
    "JSONRPC": ("A2AClientError", "401 unknown or revoked API key"),
    "HTTP+JSON": ("InvalidRequestError", "unknown or revoked API key"),
    "GRPC": ("InvalidRequestError", "unknown or revoked API key"),
}


def test_the_sdk_finds_each_binding_in_the_card(
    runtime, sdk_cards, binding, a2a_server, grpc_server
):
    # (`runtime` first, only so that the workers boot while the SDK reads the card)
    lines = sdk_cards[binding]
    assert lines[-1] == {"done": True}, lines
    card = lines[0]["event"]
    assert card["sdk_version"] == "1.3.0"
    assert card["transport"] == TRANSPORTS[binding]  # the 1.0 one, not a 0.3 compat transport
    assert (
        card["url"]
        == {
            "JSONRPC": f"{a2a_server}/a2a/",
            "HTTP+JSON": f"{a2a_server}/a2a/rest",
            "GRPC": grpc_server.address,
        }[binding]
    )
    assert card["interfaces"] == [
        {"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": f"{a2a_server}/a2a/"},
        {"protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "url": f"{a2a_server}/a2a/rest"},
        {"protocolBinding": "GRPC", "protocolVersion": "1.0", "url": grpc_server.address},
    ]
    assert card["streaming"] is True  # else send_message would not stream
    # the SDK's AuthInterceptor sends the key as `Authorization: Bearer` because of these
    assert card["security_requirements"] == [["bearer"]]
    assert card["security_schemes"] == {"bearer": "http_auth_security_scheme"}


def test_one_card_for_clients_of_both_versions(runtime, jsonrpc_sdk, a2a_server, settle):
    """Issue 32: the card fetched without `A2A-Version` is read by a 1.0 client (which takes
    a 1.0 interface from it) and by a 0.3 client (which reads only the 0.3 fields: its
    `url`, `preferredTransport`, `protocolVersion`), and each then calls the server in its
    own version."""
    tck = {"message_id": f"tck-complete-task-{uuid.uuid4()}", "metadata": {"skill": "tck"}}
    card10, sent10, card03, sent03 = jsonrpc_sdk.steps(
        ("card", {}, {"client": "plain"}),
        ("send", tck, {"client": "plain"}),
        ("card", {}, {"client": "0.3"}),
        ("send", {**tck, "message_id": f"tck-complete-task-{uuid.uuid4()}"}, {"client": "0.3"}),
    )
    jsonrpc_10 = {
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
        "url": f"{a2a_server}/a2a/",
    }
    jsonrpc_03 = {**jsonrpc_10, "protocolVersion": "0.3.0"}

    card = card10[0]["event"]
    assert card["transport"] == "JsonRpcTransport" and card["url"] == f"{a2a_server}/a2a/"
    assert card["interfaces"][0] == jsonrpc_10 and card["interfaces"][-1] == jsonrpc_03
    assert card["security_schemes"] == {"bearer": "http_auth_security_scheme"}

    card = card03[0]["event"]
    assert card["transport"] == "CompatJsonRpcTransport", card  # the SDK speaking 0.3
    assert card["url"] == f"{a2a_server}/a2a/"
    # the 0.3 fields name JSON-RPC only (the other bindings speak 1.0), as version 0.3
    assert {(i["protocolBinding"], i["url"]) for i in card["interfaces"]} == {
        ("JSONRPC", f"{a2a_server}/a2a/")
    }
    assert {i["protocolVersion"] for i in card["interfaces"]} <= {"0.3", "0.3.0"}
    assert card["security_requirements"] == [["bearer"]]

    for lines in (sent10, sent03):
        assert lines[-1] == {"done": True}, lines
        (ev,) = [line["event"] for line in lines if "event" in line]
        settle(ev["task_id"])
        assert ev["state"] == "TASK_STATE_COMPLETED" and ev["text"] == "Hello from TCK"
        assert Task.objects.get(pk=ev["task_id"]).state == "completed"


def test_send_stream_get_and_a_refused_key(sdk, binding, settle, sdk_states):
    before = Task.objects.count()
    sent, streamed, got, missing, refused = sdk.steps(
        (
            "send",
            {
                "text": "hello",
                "message_id": f"tck-complete-task-{uuid.uuid4()}",
                "metadata": {"skill": "tck"},
            },
        ),
        ("stream", {"text": "go", "metadata": {"skill": "batch", "items": 3}}),
        ("get", {"task_id": "$last", "history_length": 1}),
        ("get", {"task_id": "no-such-task"}),
        ("send", {"metadata": {"skill": "tck"}}, {"token": "not-a-key"}),
    )

    # SendMessage blocked until the agent settled: the one answer is the finished task
    assert sent[-1] == {"done": True}, sent
    (ev,) = [line["event"] for line in sent if "event" in line]
    settle(ev["task_id"])
    assert ev["kind"] == "task" and ev["state"] == "TASK_STATE_COMPLETED"
    assert ev["text"] == "Hello from TCK"
    assert ev["message"]["role"] == "ROLE_AGENT"
    task = Task.objects.get(pk=ev["task_id"])
    assert task.skill == "tck" and task.state == "completed"
    assert task.context_id == ev["context_id"]

    # SendStreamingMessage: the task, then its updates in log order to the terminal one,
    # after which the server ended the stream
    assert streamed[-1] == {"done": True}, streamed
    events = [line["event"] for line in streamed if "event" in line]
    task_id = settle(events[0]["task_id"])
    first, rest = events[0], events[1:]
    assert first["kind"] == "task"
    assert first["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert {e["task_id"] for e in events} == {task_id}
    assert {e["context_id"] for e in events} == {first["context_id"]}
    assert states(events)[-1] == "TASK_STATE_COMPLETED" and rest[-1]["kind"] == "status_update"
    # working: in the opening task when the worker took it before the stream read it (seen
    # under CI load), else as an update
    assert "TASK_STATE_WORKING" in states(events)
    assert rest[-1]["text"] == "Processed 3 items."
    assert items(Artifact.objects.get(task_id=task_id).parts) == [0, 1, 2]
    assert artifact_view(first, rest) == {RESULTS: [0, 1, 2]}, [sig(e) for e in events]
    log = logged(task_id, sdk_states, binding)
    assert [sig(e) for e in rest] == log[len(log) - len(rest) :]

    # GetTask of the streamed task, and of one that does not exist
    assert got[-1] == {"done": True}, got
    ev = got[0]["event"]
    assert ev["kind"] == "task" and ev["task_id"] == task_id
    assert ev["state"] == "TASK_STATE_COMPLETED" and ev["text"] == "Processed 3 items."
    assert ev["context_id"] == first["context_id"] and ev["history"] == 1
    assert artifact_view(ev, []) == {RESULTS: [0, 1, 2]}
    assert missing[0]["error"] == "TaskNotFoundError", missing

    # a key the server does not know: refused, nothing made
    error, words = REFUSED[binding]
    assert refused[0]["error"] == error and words in refused[0]["message"], refused
    assert Task.objects.count() == before + 2


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
    assert again[0]["error"] == "TaskNotCancelableError", again
    assert stream[0]["error"] == "UnsupportedOperationError", stream
    assert get[0]["event"]["state"] == "TASK_STATE_CANCELED", get


def test_hang_up_resubscribe_and_see_a_pause(sdk, binding, settle, sdk_states):
    """A streaming send the client leaves early; the task goes on; a resubscription gets
    what was missed, then a pause and a resume as they happen, and the end."""
    n = 14
    first = sdk.spawn(
        "stream",
        text="go",
        metadata={"skill": "batch", "items": n, "pace": 12},  # 0.3 s an item
        max_events=3,
    )
    lines = first.finish()
    assert lines[-2]["disconnected"] is True and lines[-1] == {"done": True}, lines
    one = first.events()
    task_id = settle(one[0]["task_id"])
    assert len(one) == 3 and one[0]["kind"] == "task" and lines[-2]["last"] == one[-1]
    seen_by_one = artifact_view(one[0], one[1:]).get(RESULTS, [])
    assert seen_by_one == list(range(len(seen_by_one))), (
        "the first stream itself doubled or skipped items",
        artifact_view(one[0], []),
        [sig(e) for e in one[1:]],
    )
    # while nobody listens, the task goes on: wait until it did two more items
    wait_for(
        lambda: (
            len(getattr(Artifact.objects.filter(task_id=task_id).first(), "parts", []))
            >= len(seen_by_one) + 2
        ),
        what="progress while disconnected",
    )
    assert Task.objects.get(pk=task_id).state == "working"

    live = sdk.spawn("subscribe", task_id=task_id)
    snapshot = live.until(lambda e: True)
    # the second stream starts with the task as it is now: nothing missed is lost
    assert snapshot["kind"] == "task" and snapshot["state"] == "TASK_STATE_WORKING"
    in_snapshot = artifact_view(snapshot, []).get(RESULTS, [])
    assert in_snapshot[: len(seen_by_one)] == seen_by_one
    assert len(in_snapshot) >= len(seen_by_one) + 2
    live.until(lambda e: e["kind"] == "artifact_update")  # the run is live on the stream

    outcome = services.pause_task(task_id, actor=CLIENT, reason="interop check")
    paused = live.until(lambda e: "handle" in e.get("metadata", {}))
    # The SDK's TaskState enum has no paused member: over JSON-RPC and HTTP+JSON protobuf's
    # lenient parse drops the unknown name, so the SDK user sees TASK_STATE_UNSPECIFIED (0);
    # over gRPC the open enum keeps Taskdeck's number (101). The RFC fields are in metadata.
    assert "TASK_STATE_PAUSED_BY_CLIENT" not in sdk_states
    paused_as = shown("TASK_STATE_PAUSED_BY_CLIENT", sdk_states, binding)
    assert paused["kind"] == "status_update" and paused["task_id"] == task_id
    assert (paused["state"], paused["state_value"]) == paused_as
    meta = paused["metadata"]
    assert meta["handle"] == outcome.suspension.handle and meta["initiator"] == "client"
    assert meta["reason"] == "interop check" and meta["pausedAt"]
    wait_idle(task_id)  # the worker let go: the task is really paused
    (during,) = sdk.events("get", task_id=task_id)
    assert (during["state"], during["state_value"]) == paused_as
    assert during["metadata"]["pause"]["handle"] == outcome.suspension.handle
    assert live.proc.poll() is None, "the stream of a paused task must stay open"

    services.resume_task(task_id, actor=CLIENT)
    resumed = live.until(lambda e: e.get("metadata", {}).get("cause") == "explicit_resume")
    assert resumed["kind"] == "status_update" and resumed["state"] == "TASK_STATE_WORKING"
    assert "paused-by-client" in resumed["metadata"]["previousState"].lower().replace("_", "-")
    assert resumed["metadata"]["resumedAt"]
    lines = live.finish()  # the server ends the stream after the terminal update
    assert lines[-1] == {"done": True}, lines
    events = live.events()
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    order = [events.index(e) for e in (snapshot, paused, resumed)]
    assert order == sorted(order)
    # together nothing is lost: the client's view is the finished task's
    assert artifact_view(snapshot, events[1:]) == {RESULTS: list(range(n))}, (
        artifact_view(snapshot, []),
        [sig(e) for e in events[1:]],
    )
    # and each stream is a gapless run of the log, in order
    log = logged(task_id, sdk_states, binding)
    assert [sig(e) for e in events[1:]] == log[len(log) - len(events) + 1 :]
    sigs_one = [sig(e) for e in one[1:]]
    assert any(log[i : i + len(sigs_one)] == sigs_one for i in range(len(log))), (
        f"{sigs_one} is not a run of {log}"
    )
