"""/ws/agui/ over real WebSockets against the live Daphne: two clients see the same events
in the same order, and a client that reconnects ends where a fresh one starts."""

from __future__ import annotations

import contextlib
import json

import jsonpatch
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from a2a import api_keys, auth, services
from agui import selectors
from agui.fanout import COUNTS_EVENT as COUNTS
from tests.conftest import AGENT, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


class Client:
    """A socket plus the state it has built from the events it received."""

    def __init__(self, url: str, token: str) -> None:
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(
            connect(
                url,
                additional_headers={
                    "Authorization": f"Bearer {token}",
                    "Origin": "http://127.0.0.1",
                },
                open_timeout=10,
            )
        )
        self.events: list[dict] = []
        self.state: dict = {}
        self.activities: dict[str, dict] = {}

    def recv(self) -> dict:
        event = json.loads(self.ws.recv(timeout=15))
        self.events.append(event)
        if event["type"] == "STATE_SNAPSHOT":
            self.state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            self.state = jsonpatch.apply_patch(self.state, event["delta"])
        elif event["type"] == "ACTIVITY_SNAPSHOT":
            self.activities[event["messageId"]] = event["content"]
        elif event["type"] == "ACTIVITY_DELTA":
            self.activities[event["messageId"]] = jsonpatch.apply_patch(
                self.activities[event["messageId"]], event["patch"]
            )
        return event

    def until_counts(self, counts: dict) -> None:
        """Read until the last counts the client received are `counts`."""
        told = [e for e in self.events if e.get("name") == COUNTS]
        while not told or told[-1]["value"] != counts:
            event = self.recv()
            if event.get("name") == COUNTS:
                told.append(event)

    def until_version(self, task_id: str, version: int) -> None:
        """Read until the client's view shows `task_id` at `version`."""
        while (
            self.state.get("view", {}).get("tasks", {}).get(task_id, {}).get("version") != version
        ):
            self.recv()

    def close(self) -> None:
        self._stack.close()


@pytest.fixture
def ws_url(asgi_server):
    return asgi_server.replace("http://", "ws://") + "/ws/agui/"


def changes(events: list[dict]) -> list[dict]:
    """The events that change the view or an activity: all but the counts."""
    return [e for e in events if e.get("name") != COUNTS]


def version_of(task_id: str) -> int:
    return selectors.versions([task_id])[task_id]


def test_two_clients_see_the_same_events_and_end_in_the_fresh_state(ws_url, api_key, make_task):
    waiting = make_task("input-required")
    a, b = Client(ws_url, api_key), Client(ws_url, api_key)
    try:
        for c in (a, b):
            first = c.recv()
            assert first["type"] == "STATE_SNAPSHOT"
            assert waiting.id in first["snapshot"]["view"]["tasks"]
            assert c.recv()["type"] == "ACTIVITY_SNAPSHOT"  # the pending approval
        a_start, b_start = len(a.events), len(b.events)
        task = make_task("working")
        services.pause_task(task.id, actor=CLIENT, reason="review")
        services.resume_task(task.id, actor=CLIENT)
        services.emit_text(task.id, "<script>alert(1)</script> step 2", actor=AGENT)
        services.complete_task(task.id, actor=AGENT, text="done")
        final = version_of(task.id)
        a.until_version(task.id, final)
        b.until_version(task.id, final)
        # The same changes in the same order. The counts are not among them: a key
        # without the operator scope sees its tenant's, which each socket reads when the
        # process's reading says they changed (agui/consumers.py), so one socket may show
        # a moment the other skipped; both settle on the counts as they are.
        assert changes(a.events[a_start:]) == changes(b.events[b_start:])
        now = selectors.counts(auth.authenticate(f"Bearer {api_key}").actor)
        a.until_counts(now)
        b.until_counts(now)
        types = {e["type"] for e in a.events[a_start:]}
        assert {"STATE_DELTA", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"} <= types
        assert a.state == selectors.snapshot()
        handle = task.suspensions.get().handle
        assert a.activities[handle]["stage"] == "resumed"
    finally:
        a.close(), b.close()


def test_a_client_that_reconnects_ends_like_a_fresh_one(ws_url, api_key, make_task):
    task = make_task("working")
    a = Client(ws_url, api_key)
    a.recv()
    a.close()
    services.pause_task(task.id, actor=CLIENT)  # missed while disconnected
    services.resume_task(task.id, actor=CLIENT)
    again, fresh = Client(ws_url, api_key), Client(ws_url, api_key)
    try:
        again.recv(), fresh.recv()
        assert again.state == fresh.state == selectors.snapshot()
        assert again.state["view"]["tasks"][task.id]["version"] == version_of(task.id)
        again.ws.send(json.dumps({"type": "resync"}))
        while (event := again.recv())["type"] == "CUSTOM":  # the counts after the snapshot
            assert event["name"] == "taskdeck.counts"
        assert event["type"] == "STATE_SNAPSHOT"
    finally:
        again.close(), fresh.close()


def test_sockets_need_a_key_with_read_scope_or_a_session(ws_url, make_task):
    _, writer_only = api_keys.create_key("writer", ["write"], owner="test-client")
    for headers in ({}, {"Authorization": f"Bearer {writer_only}"}, {"Authorization": "Bearer x"}):
        with pytest.raises(InvalidStatus) as err:
            connect(ws_url, additional_headers={**headers, "Origin": "http://127.0.0.1"})
        assert err.value.response.status_code == 403


def test_sockets_from_another_origin_are_refused(ws_url, api_key):
    with pytest.raises(InvalidStatus) as err:
        connect(
            ws_url,
            additional_headers={
                "Authorization": f"Bearer {api_key}",
                "Origin": "https://evil.example",
            },
        )
    assert err.value.response.status_code == 403


def touches(event: dict, task_id: str) -> bool:
    """A STATE_DELTA that changes `task_id`'s entry."""
    prefix = f"/view/tasks/{task_id}"
    return event["type"] == "STATE_DELTA" and any(
        op["path"] == prefix or op["path"].startswith(prefix + "/") for op in event["delta"]
    )


def test_changes_committed_before_one_pass_reach_a_socket_as_one_version(
    ws_url, api_key, make_task, hold_projection
):
    from agui import projection

    task, marker = make_task("working"), make_task("working")
    version = version_of(task.id)
    client = Client(ws_url, api_key)
    try:
        client.recv()
        assert client.state["view"]["tasks"][task.id]["version"] == version  # it holds v
        start = len(client.events)
        hold_projection()  # this process's changes commit and stay due
        services.pause_task(task.id, actor=CLIENT, reason="first look")
        services.resume_task(task.id, actor=CLIENT)
        services.emit_text(task.id, "still here", actor=AGENT)
        services.pause_task(task.id, actor=CLIENT, reason="second look")
        services.resume_task(task.id, actor=CLIENT)
        handles = [s.handle for s in task.suspensions.order_by("suspended_at")]
        assert projection.project([task.id]) == {task.id}  # the projector, released: one pass
        client.until_version(task.id, version + 1)
        services.pause_task(marker.id, actor=CLIENT, reason="after")  # a later change…
        assert projection.project([marker.id]) == {marker.id}
        client.until_version(marker.id, version_of(marker.id))  # …arrives after all of it
        mine = [e for e in client.events[start:] if touches(e, task.id)]
        assert len(mine) == 1  # one STATE_DELTA for the five changes, v → v+1: no gap
        assert {
            "op": "replace",
            "path": f"/view/tasks/{task.id}/version",
            "value": version + 1,
        } in (mine[0]["delta"])
        assert client.state == selectors.snapshot()  # no change missed
        entry = client.state["view"]["tasks"][task.id]
        assert entry["taskVersion"] == task.version + 5 and entry["status"] == "working"
        assert [client.activities[h]["stage"] for h in handles] == ["resumed", "resumed"]

        services.pause_task(task.id, actor=CLIENT, reason="third look")  # one more change…
        assert projection.project([task.id]) == {task.id}
        client.until_version(task.id, version + 2)  # …is the next version, no gap
        assert len([e for e in client.events[start:] if touches(e, task.id)]) == 2
    finally:
        client.close()


def test_a_pass_over_several_tasks_reaches_a_socket_as_one_state_delta(
    ws_url, api_key, make_task, hold_projection
):
    """At fleet load a pass projects hundreds of tasks' changes: a socket gets the batch's
    deltas as one STATE_DELTA (one frame, not one per task), each task still one version
    on, and ends in the fresh state."""
    from agui import projection

    tasks = [make_task("working") for _ in range(3)]
    before = {t.id: version_of(t.id) for t in tasks}
    client = Client(ws_url, api_key)
    try:
        client.recv()
        start = len(client.events)
        hold_projection()
        for t in tasks:
            services.pause_task(t.id, actor=CLIENT, reason="batch")
        assert projection.project([t.id for t in tasks]) == {t.id for t in tasks}
        for t in tasks:
            client.until_version(t.id, before[t.id] + 1)
        deltas = [e for e in client.events[start:] if e["type"] == "STATE_DELTA"]
        assert len(deltas) == 1 and all(touches(deltas[0], t.id) for t in tasks)
        assert client.state == selectors.snapshot()
    finally:
        client.close()


def test_a_merged_delta_never_holds_two_versions_of_one_task():
    """A client checks that each STATE_DELTA moves a task by one version (live.js resyncs
    on a jump): a task's second change in a batch starts a new frame. Each task's events
    keep their order (a change's activities come before its delta, as projected)."""
    import asyncio

    from agui.consumers import ViewConsumer, merged_deltas

    def delta(task: str, version: int) -> str:
        op = {"op": "replace", "path": f"/view/tasks/{task}/version", "value": version}
        return json.dumps({"type": "STATE_DELTA", "delta": [op]})

    def activity(task: str) -> str:
        return json.dumps({"type": "ACTIVITY_DELTA", "messageId": task})

    sent: list[dict] = []
    consumer = ViewConsumer()

    async def record(text: str, kind: str | None) -> bool:
        sent.append(json.loads(text))
        return True

    consumer._send_text = record
    outgoing = [
        (activity("a"), "ACTIVITY_DELTA", "a"),
        (delta("a", 2), "STATE_DELTA", "a"),
        (activity("b"), "ACTIVITY_DELTA", "b"),
        (delta("b", 5), "STATE_DELTA", "b"),
        (delta("c", 1), "STATE_DELTA", "c"),
        (activity("a"), "ACTIVITY_DELTA", "a"),  # a's next change: a new frame
        (delta("a", 3), "STATE_DELTA", "a"),
        (delta("d", 7), "STATE_DELTA", "d"),
        (activity("d"), "ACTIVITY_DELTA", "d"),  # after d's delta, as it came
    ]
    assert asyncio.run(consumer._send_merged(outgoing))
    frames = [
        [op["path"].split("/")[3] for op in e["delta"]] if "delta" in e else e["messageId"]
        for e in sent
    ]
    assert frames == ["a", "b", ["a", "b", "c"], "a", ["a", "d"], "d"]
    merged = merged_deltas((delta("a", 2), delta("b", 5), delta("c", 1)))
    assert json.loads(merged) == sent[2]
