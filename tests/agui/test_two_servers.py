"""Scale-out: a change made through one server reaches WebSocket clients of another, and
a client whose server is killed reconnects to the other and resyncs."""

from __future__ import annotations

import os
import signal

import pytest

from agui import selectors
from tests.agui.test_websocket import Client, version_of
from tests.conftest import start_daphne, stop_daphne

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def second_server(django_db_setup, django_db_blocker):
    """Another Daphne process on the same database (and channel layer, when it is Redis)."""
    proc = start_daphne(django_db_blocker, what="the second Daphne")
    yield proc, f"ws://127.0.0.1:{proc.port.value}/ws/agui/"
    stop_daphne(proc)


def test_a_change_through_one_server_reaches_clients_of_the_other(
    rpc, api_key, make_task, second_server
):
    _, url_b = second_server
    task = make_task("working")
    client = Client(url_b, api_key)
    try:
        client.recv()  # snapshot from server B
        rpc.result("tasks/pause", {"taskId": task.id, "reason": "via server A"})
        client.until_version(task.id, version_of(task.id))
        entry = client.state["view"]["tasks"][task.id]
        assert entry["status"] == "paused-by-client"
        assert entry["pause"]["reason"] == "via server A"
    finally:
        client.close()


def test_a_client_of_a_killed_server_reconnects_to_the_other_and_resyncs(
    rpc, api_key, make_task, second_server, asgi_server
):
    proc, url_b = second_server
    task = make_task("working")
    client = Client(url_b, api_key)
    client.recv()
    os.kill(proc.pid, signal.SIGKILL)  # the server dies with the socket open
    with pytest.raises(Exception):  # noqa: B017 - any transport error: the socket is gone
        while True:
            client.recv()
    rpc.result("tasks/pause", {"taskId": task.id, "reason": "while B was down"})
    url_a = asgi_server.replace("http://", "ws://") + "/ws/agui/"
    again = Client(url_a, api_key)  # what the dashboard's reconnect does
    try:
        again.recv()
        assert again.state == selectors.snapshot()
        assert again.state["view"]["tasks"][task.id]["pause"]["reason"] == "while B was down"
    finally:
        again.close()
