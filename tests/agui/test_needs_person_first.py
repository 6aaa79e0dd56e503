"""Needs a person first, always (issue 29, item 1): a live view cut to its byte budget
never drops a task waiting for a person (input-required, auth-required) or paused by an
operator (paused-by-client), ranks them above working tasks and agent parks, and the
counts a socket gets are over every task, not over the tasks it holds.

Before: the cut ranked approvals, operator pauses and agent parks equally, newest first,
so 1,300 fresh parks pushed 4 older approvals out of the board, and the board's counts,
the tab title and the Inbox badge, computed from the cut, read 0 while /inbox listed 4.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from a2a import services
from agui import fanout, selectors, view
from tests.agui.test_view_bound import SOCKET_LIMIT, pause_many, wire_size
from tests.agui.test_websocket import Client, version_of
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)
COUNTS = fanout.COUNTS_EVENT


@pytest.fixture
def ws_url(asgi_server) -> str:
    return asgi_server.replace("http://", "ws://") + "/ws/agui/"


def counts_of(client: Client) -> dict:
    """The counts the socket said last."""
    said = [e for e in client.events if e["type"] == "CUSTOM" and e["name"] == fanout.COUNTS_EVENT]
    return said[-1]["value"]


def read_until_counts(client: Client) -> None:
    """The opening: snapshot, the overflow's adds, activities, then the counts."""
    while not (client.recv()["type"] == "CUSTOM" and client.events[-1]["name"] == COUNTS):
        pass


def test_the_window_ranks_who_needs_a_person_first_and_never_cuts_them(make_task):
    """The order and the cut, without a socket: with no room at all (one byte), the window
    holds nothing but the tasks that need a person, as its overflow; with room for some,
    they come first, then working, then parks, then the finished."""
    parked = make_task("paused-by-agent")
    done = make_task("completed")
    asking = make_task("input-required")
    held = make_task("paused-by-client")
    working = make_task("working")
    signing = make_task("auth-required")
    newest_park = make_task("paused-by-agent")

    nothing = selectors.window(max_bytes=1)
    assert nothing.snapshot["view"]["tasks"] == {}
    assert [t for t, _, _ in nothing.overflow] == [signing.id, held.id, asking.id]
    assert set(nothing.versions) == {signing.id, held.id, asking.id}
    assert nothing.snapshot["truncated"]["shown"] == 3
    # the overflow as adds: one message per task when each is as big as the budget allows
    deltas = nothing.overflow_deltas(1)
    assert len(deltas) == 3
    requests = [op for ops in deltas for op in ops if op["path"].startswith("/view/pending")]
    assert {r["value"]["taskId"] for r in requests} == {asking.id, signing.id}
    state = {"view": {"tasks": {}, "pendingInterrupts": {}}}
    for ops in deltas:
        for op in ops:
            section, _, key = op["path"][len("/view/") :].partition("/")
            state["view"][section][key] = op["value"]
    whole = selectors.snapshot()["view"]
    assert state["view"]["tasks"] == {t: whole["tasks"][t] for t in nothing.versions}
    assert state["view"]["pendingInterrupts"] == whole["pendingInterrupts"]

    everything = selectors.window(max_bytes=10 * 1024 * 1024)
    order = list(everything.snapshot["view"]["tasks"])
    assert order == [
        signing.id, held.id, asking.id, working.id, newest_park.id, parked.id, done.id
    ]  # fmt: skip
    # the board filtered by a state holds that state right after those needing a person
    focused = selectors.window(max_bytes=10 * 1024 * 1024, focus="paused-by-agent")
    assert list(focused.snapshot["view"]["tasks"])[3:5] == [newest_park.id, parked.id]
    assert selectors.ranked_groups("paused")[:2] == [view.NEEDS_PERSON, ["paused-by-agent"]]
    assert selectors.ranked_groups("no-such-state") == selectors.ranked_groups(None)


def test_counts_are_over_every_task_not_over_the_window(make_task):
    for state in ("input-required", "input-required", "paused-by-agent", "working", "failed"):
        make_task(state)
    counts = selectors.counts()
    assert counts["states"]["input-required"] == 2
    assert counts["states"]["paused-by-agent"] == 1
    assert counts["states"]["failed"] == 1
    assert counts["total"] == 5
    assert counts["requests"] == 2 and counts["requestsMore"] is False
    assert selectors.window(max_bytes=1).snapshot["view"]["tasks"] == {}  # the cut: no matter


def test_a_flood_of_parks_and_operator_pauses_keeps_every_pause_and_approval(ws_url, api_key):
    """30 operator pauses of 24 KB (720 KB, past the 512 KB budget), 3 approvals older
    than 30 newer parks: the socket holds every pause and every approval (the pauses that
    did not fit arrive as `add`s right after the snapshot, no message over the server's
    limit), the parks are what is cut, and the counts it is told are over every task. A
    cut park that asks for input joins the socket's view, whole; the counts follow."""
    asking = []
    for _ in range(3):
        task = services.create_task(user_message("approve me"), actor=CLIENT, skill="approval")
        services.start_task(task.id, actor=AGENT)
        services.request_input(
            task.id, actor=AGENT, explanation="Please approve", request=APPROVAL_REQUEST
        )
        asking.append(task.id)
    paused = pause_many(30, by_agent=False)
    parked = pause_many(30)
    client = Client(ws_url, api_key)
    try:
        first = client.recv()
        assert first["type"] == "STATE_SNAPSHOT"
        budget = settings.TASKDECK["VIEW"]["SNAPSHOT_BYTES"]
        assert wire_size(first) <= budget
        read_until_counts(client)
        assert all(wire_size(e) < SOCKET_LIMIT for e in client.events)
        tasks = client.state["view"]["tasks"]
        assert set(asking) | set(paused) <= set(tasks)  # all of them, whatever the budget
        assert not set(parked) & set(tasks)  # the parks are what is cut
        whole = selectors.snapshot()["view"]
        assert tasks == {t: whole["tasks"][t] for t in tasks}
        assert client.state["view"]["pendingInterrupts"] == whole["pendingInterrupts"]
        assert first["snapshot"]["truncated"]["shown"] == len(tasks) == 33
        counts = counts_of(client)
        assert counts["states"]["paused-by-client"] == 30
        assert counts["states"]["paused-by-agent"] == 30
        assert counts["states"]["input-required"] == 3
        assert counts["requests"] == 3 and counts["total"] == 63

        # a cut park resumed to work stays out; when it then asks for input it joins
        services.resume_task(parked[0], actor=CLIENT)
        services.request_input(
            parked[0], actor=AGENT, explanation="Please approve", request=APPROVAL_REQUEST
        )
        client.until_version(parked[0], version_of(parked[0]))
        entry = client.state["view"]["tasks"][parked[0]]
        assert entry == selectors.snapshot()["view"]["tasks"][parked[0]]
        assert entry["status"] == "input-required"
        whole = selectors.snapshot()["view"]
        assert client.state["view"]["pendingInterrupts"] == whole["pendingInterrupts"]
        while counts_of(client)["requests"] != 4:
            client.recv()
        assert counts_of(client)["states"]["paused-by-agent"] == 29
        # and it goes on like any held task
        services.cancel_task(parked[0], actor=CLIENT, reason="enough")
        client.until_version(parked[0], version_of(parked[0]))
        assert client.state["view"]["tasks"][parked[0]]["status"] == "canceled"
    finally:
        client.close()

    # a board filtered by parks holds them right after those needing a person: here
    # those alone are past the budget, so the filter takes nothing from them
    focused = Client(ws_url + "?focus=paused-by-agent", api_key)
    try:
        read_until_counts(focused)
        assert set(asking) | set(paused) <= set(focused.state["view"]["tasks"])
        focused.ws.send(json.dumps({"type": "resync", "focus": "paused"}))  # filter changed
        while focused.recv()["type"] != "STATE_SNAPSHOT":
            pass
        read_until_counts(focused)
        assert set(asking) | set(paused) <= set(focused.state["view"]["tasks"])
    finally:
        focused.close()


def test_a_socket_takes_its_focus_from_its_address():
    from agui.consumers import _focus_of

    assert _focus_of(b"focus=paused-by-agent") == "paused-by-agent"
    assert _focus_of(b"focus=paused") == "paused"
    assert _focus_of(b"focus=%3Cscript%3E") is None
    assert _focus_of(b"") is None


def test_a_joining_task_is_read_with_the_activities_of_the_same_version(
    transactional_db, monkeypatch
):
    """agui.consumers._joining: a change committed between the reads of a joining task's
    entry and of its activities (here: the request cancelled) is read again, so the socket
    is never sent an entry with requests whose activities it lacks, nor activities of a
    request its entry no longer has."""
    from agui import consumers

    task = services.create_task(user_message("approve me"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    services.request_input(
        task.id, actor=AGENT, explanation="Please approve", request=APPROVAL_REQUEST
    )
    read = selectors.pending_activities
    cancelled = []

    def cancelled_meanwhile(*args, **kwargs):
        if not cancelled:  # the first read of the activities: a change commits just before
            cancelled.append(services.cancel_task(task.id, actor=CLIENT, reason="enough"))
        return read(*args, **kwargs)

    monkeypatch.setattr(selectors, "pending_activities", cancelled_meanwhile)
    found = consumers._joining(task.id, None)
    assert cancelled and found is not None  # a finished task stays in the view a while
    (entry, version, mine), activities = found
    now = selectors.entries_now([task.id], None)[task.id]
    assert (entry, version) == now[:2]
    assert entry["status"] == "canceled" and not mine and not activities
