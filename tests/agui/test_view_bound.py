"""The live view stays bounded (issue 15, bug 12): finished tasks leave it, and no socket
message outgrows the WebSocket server's limit, however many tasks there are.

Before the fix, every task ever made stayed in /view/tasks and the opening STATE_SNAPSHOT
carried them all in one message; past 1 MiB Daphne refused to send it and closed every
socket with 1011, so the board stayed empty for everyone. Entries here are made heavy
with characters outside the BMP (sent as two \\uXXXX escapes: twelve bytes a character,
while titles and texts are cut by characters), so 150 tasks weigh what about 1,500
ordinary ones do, and each test stays within seconds.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings

from a2a import periodic, services
from a2a.models import Task
from agui import projector, selectors
from tests.agui.test_websocket import Client, version_of
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)

SOCKET_LIMIT = 1024 * 1024  # Daphne's websocket_max_message_size: the server's refusal
HEAVY = "\N{PACKAGE}"  # 📦: a twelve-byte character on the wire


@pytest.fixture
def ws_url(asgi_server) -> str:
    return asgi_server.replace("http://", "ws://") + "/ws/agui/"


def view_settings(**bounds) -> override_settings:
    """These view bounds for the writers of this process (the projector runs here)."""
    view = {**settings.TASKDECK.get("VIEW", {}), **bounds}
    return override_settings(TASKDECK={**settings.TASKDECK, "VIEW": view})


def finish_many(n: int) -> list[str]:
    """n tasks created and rejected through the services, oldest first: a full title
    (120 characters) and a full status text (500) each, about 7.9 KB of entry."""
    ids: list[str] = []
    for start in range(0, n, 100):  # a transaction per hundred: quicker
        with transaction.atomic():
            for _ in range(start, min(n, start + 100)):
                task = services.create_task(user_message(HEAVY * 120), actor=CLIENT, skill="batch")
                services.reject_task(task.id, actor=AGENT, reason="busy", text=HEAVY * 500)
                ids.append(task.id)
    return ids


def pause_many(n: int, *, by_agent: bool = True) -> list[str]:
    """n open tasks parked by their agent (`by_agent`) or paused by their client, with a
    full reason (2,000 characters): about 24 KB of entry each. Oldest first. Parks are cut
    to the budget; client pauses need a person and never are (tests/agui/
    test_needs_person_first.py)."""
    ids: list[str] = []
    for start in range(0, n, 100):
        with transaction.atomic():
            for _ in range(start, min(n, start + 100)):
                task = services.create_task(user_message("hold me"), actor=CLIENT, skill="batch")
                if by_agent:
                    services.start_task(task.id, actor=AGENT)
                    services.park_task(task.id, actor=AGENT, reason=HEAVY * 2000)
                else:
                    services.pause_task(task.id, actor=CLIENT, reason=HEAVY * 2000)
                ids.append(task.id)
    return ids


def wire_size(event: dict) -> int:
    """Bytes of an event as the server sends it (compact, ASCII-escaped JSON)."""
    return len(json.dumps(event, separators=(",", ":")))


def removed(client: Client, task_id: str) -> bool:
    path = f"/view/tasks/{task_id}"
    return any(
        op == {"op": "remove", "path": path}
        for e in client.events
        if e["type"] == "STATE_DELTA"
        for op in e["delta"]
    )


def test_a_view_of_many_finished_tasks_still_opens_and_keeps_the_newest(ws_url, api_key, rpc):
    """Bug 12 as a busy deployment meets it: 150 finished tasks (1.2 MB of entries, past
    the server's 1 MiB) — before the fix the socket was closed (1011) before its first
    message. Now only the newest FINISHED_MAX finished tasks are in the view."""
    with view_settings(FINISHED_MAX=50):
        ids = finish_many(150)
        client = Client(ws_url, api_key)
        try:
            first = client.recv()  # before the fix: ConnectionClosedError (1011)
            assert first["type"] == "STATE_SNAPSHOT"
            assert wire_size(first) < SOCKET_LIMIT
            assert set(first["snapshot"]["view"]["tasks"]) == set(ids[-50:])
            assert "truncated" not in first["snapshot"]
            assert client.state == selectors.snapshot()

            # Alive: the next finished task comes in, the oldest of the view goes out.
            (newest,) = finish_many(1)
            client.until_version(newest, version_of(newest))
            while not removed(client, ids[-50]):
                client.recv()
            assert set(client.state["view"]["tasks"]) == {*ids[-49:], newest}
            assert client.state == selectors.snapshot()
        finally:
            client.close()
    # Out of the live view, still a query away.
    gone = rpc.result("tasks/get", {"id": ids[0]})
    assert gone["status"]["state"] == "rejected"


def test_more_open_tasks_than_fit_arrive_cut_to_the_budget_and_the_socket_lives(ws_url, api_key):
    """Open tasks never leave the view, so a flood of them (one key, 60 parked tasks of
    1.4 MB) must not empty the board either: the snapshot holds what fits the budget —
    the newest — says it is cut and by how much, and the socket then follows those tasks
    and every new one, equal to the fresh view for each of them."""
    ids = pause_many(60)
    client = Client(ws_url, api_key)
    try:
        first = client.recv()  # before the fix: ConnectionClosedError (1011)
        assert first["type"] == "STATE_SNAPSHOT"
        budget = settings.TASKDECK["VIEW"]["SNAPSHOT_BYTES"]
        assert wire_size(first) <= budget < SOCKET_LIMIT
        held = list(first["snapshot"]["view"]["tasks"])
        note = first["snapshot"]["truncated"]
        assert note == {"shown": len(held), "total": 60, "maxBytes": budget}
        assert 0 < len(held) < 60
        assert set(held) == set(ids[-len(held) :])  # the newest
        for _ in held:  # one ACTIVITY_SNAPSHOT per pause of a held task, no more
            assert client.recv()["type"] == "ACTIVITY_SNAPSHOT"
        pauses = Task.objects.filter(pk__in=held).values_list("current_suspension__handle")
        assert set(client.activities) == {handle for (handle,) in pauses}

        services.resume_task(ids[0], actor=CLIENT)  # not held: nothing to send, no harm
        services.resume_task(held[0], actor=CLIENT)
        fresh = services.create_task(user_message("new"), actor=CLIENT, skill="batch")
        client.until_version(held[0], version_of(held[0]))
        client.until_version(fresh.id, version_of(fresh.id))
        tasks = client.state["view"]["tasks"]
        assert ids[0] not in tasks
        assert set(tasks) == {*held, fresh.id}
        whole = selectors.snapshot()["view"]["tasks"]
        assert tasks == {task_id: whole[task_id] for task_id in tasks}
        assert all(wire_size(e) < SOCKET_LIMIT for e in client.events)
    finally:
        client.close()


def test_finished_tasks_leave_the_view_by_a_remove_delta(ws_url, api_key, make_task):
    """A connected client sees finished tasks leave — pushed out by newer finished ones,
    or when their time is up — by STATE_DELTA `remove`, and ends equal to a fresh
    snapshot and to a client that connects afterwards."""
    with view_settings(FINISHED_MAX=2):
        waiting = make_task("input-required")
        done = [make_task("completed"), make_task("failed")]
        client = Client(ws_url, api_key)
        try:
            client.recv()
            assert {waiting.id, *(t.id for t in done)} <= set(client.state["view"]["tasks"])
            third = make_task("canceled")  # three finished: the oldest leaves
            while not removed(client, done[0].id):
                client.recv()
            client.until_version(third.id, version_of(third.id))
            assert set(client.state["view"]["tasks"]) == {waiting.id, done[1].id, third.id}
            assert client.state == selectors.snapshot()

            # Time is up for the other two: the scheduler's tick takes them out.
            assert projector.evict_now_and_then in periodic.jobs()
            with view_settings(FINISHED_MAX=2, FINISHED_MINUTES=0):
                assert projector.evict_finished() == 2
            while not (removed(client, done[1].id) and removed(client, third.id)):
                client.recv()
            assert set(client.state["view"]["tasks"]) == {waiting.id}
            later = Client(ws_url, api_key)
            try:
                later.recv()
                assert client.state == later.state == selectors.snapshot()
            finally:
                later.close()
        finally:
            client.close()


@pytest.mark.asyncio
async def test_a_cut_socket_takes_no_task_it_was_cut_from_when_the_reader_hands_it_over_late():
    """The process's log reader (fanout.Tailer) may hand a socket rows that committed before
    the socket read its snapshot (under load it reads them late). A socket whose snapshot
    was cut must not take the creation of a task it was cut from as a new task (CI once
    saw a cut board show a task it had cut); a task created after the snapshot is new."""
    from agui.consumers import ViewConsumer
    from agui.fanout import encoded
    from agui.view import task_path

    sent: list[dict] = []
    socket = ViewConsumer()
    socket.who = SimpleNamespace(restricted=False)  # an operator: sees every task
    socket.versions, socket.truncated, socket.decided = {"held": 2}, True, 100

    async def send(text: str) -> None:
        sent.append(json.loads(text))

    socket.send = send

    def created(row_id: int, task_id: str) -> tuple:
        delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": task_path(task_id),
                                                    "value": {"taskId": task_id}}]}  # fmt: skip
        return (row_id, task_id, 1, "STATE_DELTA", delta)

    await socket._deliver(encoded([created(90, "cut"), created(101, "new")]))
    assert [e["delta"][0]["path"] for e in sent] == [task_path("new")]
    assert socket.versions == {"held": 2, "new": 1}
