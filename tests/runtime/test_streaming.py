"""message/stream and tasks/resubscribe over real SSE, with real workers driving the task."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from a2a import services
from tests.conftest import CLIENT
from tests.runtime.conftest import wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def sse(response: httpx.Response) -> Iterator[tuple[str | None, dict]]:
    """(event id, JSON-RPC message) for each SSE event; comments are skipped."""
    event_id, data = None, []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield event_id, json.loads("\n".join(data))
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def stream(rpc, method: str, params: dict, headers=None, limit: int = 200):
    body = {"jsonrpc": "2.0", "id": "s-1", "method": method, "params": params}
    h = {"Authorization": f"Bearer {rpc.token}", **(headers or {})}
    with rpc.http.stream("POST", "/a2a/", json=body, headers=h, timeout=60) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        out = []
        for item in sse(response):
            out.append(item)
            if len(out) >= limit:
                break
        return out


def send_params(skill: str, **metadata) -> dict:
    return {
        "message": {
            "role": "user",
            "messageId": f"m-{skill}",
            "parts": [{"kind": "text", "text": "go"}],
        },
        "metadata": {"skill": skill, **metadata},
    }


def states(events) -> list[str]:
    return [m["result"]["status"]["state"] for _, m in events if "status" in m["result"]]


def test_message_stream_follows_a_batch_to_completion(runtime, rpc):
    events = stream(rpc, "message/stream", send_params("batch", items=3))
    results = [m["result"] for _, m in events]
    assert results[0]["kind"] == "task" and all(m["id"] == "s-1" for _, m in events)
    assert states(events)[-1] == "completed" and results[-1]["final"] is True
    artifacts = [r for r in results if r["kind"] == "artifact-update"]
    # each update carries only the part it added: a client appending them rebuilds the
    # artifact exactly, however late it reads (a replay from the start included)
    assert [[p["data"]["item"] for p in r["artifact"]["parts"]] for r in artifacts] == [
        [0],
        [1],
        [2],
    ]
    assert [r["append"] for r in artifacts] == [False, True, True]
    replay = stream(
        rpc, "tasks/resubscribe", {"id": results[0]["id"]}, headers={"Last-Event-ID": "0"}
    )
    replayed = [m["result"] for _, m in replay if m["result"].get("kind") == "artifact-update"]
    assert [[p["data"]["item"] for p in r["artifact"]["parts"]] for r in replayed] == [
        [0],
        [1],
        [2],
    ]
    ids = [int(i) for i, _ in events]
    assert ids == sorted(ids)


def test_stream_ends_at_input_required_and_shows_the_request(runtime, rpc):
    events = stream(rpc, "message/stream", send_params("approval"))
    last = events[-1][1]["result"]
    assert last["status"]["state"] == "input-required" and last["final"] is True
    data = [p for p in last["status"]["message"]["parts"] if p["kind"] == "data"]
    assert data[0]["data"]["type"] == "a2a.input.request"


def test_pause_and_resume_appear_on_the_stream_with_the_rfc_fields(runtime, rpc, start):
    task = start("ci-wait", build=77)
    wait_state(task.id, "paused-by-agent")
    wait_idle(task.id)
    services.resume_task(task.id, actor=CLIENT, continue_transcript=False)
    wait_state(task.id, "completed")
    events = stream(rpc, "tasks/resubscribe", {"id": task.id}, headers={"Last-Event-ID": "0"})
    by_state = {
        m["result"]["status"]["state"]: m["result"] for _, m in events if "status" in m["result"]
    }
    parked = by_state["paused-by-agent"]["metadata"]
    assert parked["initiator"] == "agent" and parked["handle"].startswith("suspend-")
    assert parked["conditions"]["onEvent"] == "ci.build.completed:77"
    resumed = next(
        m["result"]
        for _, m in events
        if m["result"].get("metadata", {}).get("cause") == "explicit_resume"
    )
    assert resumed["metadata"]["previousState"] == "paused-by-agent"
    assert resumed["metadata"]["continueTranscript"] is False
    assert events[-1][1]["result"]["status"]["state"] == "completed"


def test_resubscribe_after_a_disconnect_misses_nothing(runtime, rpc, start):
    task = start("batch", items=6, pace=2)
    first = stream(rpc, "tasks/resubscribe", {"id": task.id}, limit=3)  # then hang up
    last_id = first[-1][0]
    rest = stream(rpc, "tasks/resubscribe", {"id": task.id}, headers={"Last-Event-ID": last_id})
    full = stream(rpc, "tasks/resubscribe", {"id": task.id}, headers={"Last-Event-ID": "0"})
    snapshot_cursor = int(first[0][0])  # first[0] is the Task snapshot, taken at this cursor
    seen = [i for i, _ in first[1:]] + [i for i, _ in rest]
    assert seen == [i for i, _ in full if int(i) > snapshot_cursor]  # none lost or doubled
    assert rest[-1][1]["result"]["status"]["state"] == "completed"
