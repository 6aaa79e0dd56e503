"""Fault tolerance (issue 7): Redis restarts under two live servers.

Redis only carries wake-up calls (pokes for the AG-UI Tailer, announcements for A2A
streams); the database holds the truth. So when Redis dies a change must still commit and
answer, sockets and streams must fall back to polling the database, and when Redis comes
back they must re-join their groups (a restarted Redis without persistence has forgotten
them) and be woken by it again, by themselves.

The test owns its Redis (tests/redis_server.py): a `redis-server` on a free port (never the
machine's 6379, which other test runs use), killed with SIGKILL and started again on the
same port. Around the outage it checks a socket and a tasks/resubscribe stream that span
it, a socket (and so a Tailer) and a stream that start during it, a blocking message/send
made during it, the re-joining of every group afterwards, the log in the database, and
both servers' health.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from a2a.models import TaskEvent
from a2a.notify import group_name
from a2a.protocol.stream import STATUS_KINDS
from agui.projector import VIEW_GROUP
from dashboard.settings import redis_channel_layers
from tests.agui.test_websocket import Client, version_of
from tests.conftest import Rpc, local_http, start_daphne, stop_daphne
from tests.redis_server import WAIT, log_to
from tests.runtime.test_streaming import sse

if TYPE_CHECKING:
    from daphne.testing import DaphneProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _application(redis_url: str, log_path: str):
    """Runs in each Daphne child process, which is forked from the test process.

    The least invasive way to give the children our Redis: `override_settings(...).enable()`
    here, in the child only. It fires `setting_changed`, on which Channels drops the layers
    it built, so the child builds a fresh one on our Redis; the test process, the session's
    `asgi_server` and the machine's Redis are untouched. The child's stderr and everything
    it logs at WARNING or above go to `log_path`, for the test to read. Blocking sends wait
    briefly: no agent worker runs here."""
    from channels.routing import get_default_application
    from django.conf import settings
    from django.test import override_settings

    override_settings(
        CHANNEL_LAYERS=redis_channel_layers(redis_url),
        TASKDECK={**settings.TASKDECK, "BLOCKING_SEND_SECONDS": 0.5},
    ).enable()
    log_to(log_path)
    return get_default_application()


@dataclass
class Server:
    name: str
    proc: DaphneProcess
    url: str
    log: Path

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws/agui/"

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def servers(our_redis, django_db_setup, django_db_blocker, tmp_path) -> Iterator[list[Server]]:
    """Daphne A and B on the test database, both with our Redis as channel layer."""
    started: list[Server] = []
    for name in ("A", "B"):
        log = tmp_path / f"daphne-{name}.log"
        app = partial(_application, our_redis.url, str(log))
        proc = start_daphne(django_db_blocker, app, what=f"Daphne {name}")
        started.append(Server(name, proc, f"http://127.0.0.1:{proc.port.value}", log))
    yield started
    for server in started:
        stop_daphne(server.proc)


class Subscription(threading.Thread):
    """tasks/resubscribe read in a thread: each SSE event lands in a queue, then None."""

    def __init__(self, base_url: str, token: str, task_id: str) -> None:
        super().__init__(daemon=True)
        self.body = {
            "jsonrpc": "2.0",
            "id": "sub",
            "method": "tasks/resubscribe",
            "params": {"id": task_id},
        }
        self.base_url, self.token = base_url, token
        self.items: queue.Queue = queue.Queue()
        self.seen: list[tuple[int, dict]] = []
        self.arrived: dict[str, float] = {}  # state -> when its event arrived (monotonic)
        self.start()

    def run(self) -> None:
        auth = {"Authorization": f"Bearer {self.token}"}
        try:
            with (
                local_http(base_url=self.base_url, timeout=httpx.Timeout(WAIT, read=60)) as h,
                h.stream("POST", "/a2a/", json=self.body, headers=auth) as response,
            ):
                assert response.status_code == 200, response.status_code
                for event_id, message in sse(response):
                    self.items.put((int(event_id), message, time.monotonic()))
        except BaseException as exc:  # handed to the test thread
            self.items.put(exc)
        self.items.put(None)

    def next(self) -> tuple[int, dict] | None:
        """The next event (id, result), or None when the stream ended; bounded wait."""
        item = self.items.get(timeout=WAIT)
        if isinstance(item, BaseException):
            raise item
        if item is None:
            return None
        event_id, message, arrived = item
        assert "result" in message, message
        self.seen.append((event_id, message["result"]))
        self.arrived.setdefault(message["result"].get("status", {}).get("state"), arrived)
        return event_id, message

    def until_state(self, state: str) -> None:
        while True:
            item = self.next()
            assert item is not None, f"the stream ended before {state}"
            if item[1]["result"].get("status", {}).get("state") == state:
                return


def _since(started: float, fn, *args) -> float:
    fn(*args)
    return time.monotonic() - started


def test_a_redis_restart_loses_nothing_and_events_resume(our_redis, servers, api_key, make_task):
    a, b = servers
    task = make_task("working")
    rpc_a = Rpc(local_http(base_url=a.url, timeout=30), api_key)
    client = Client(b.ws, api_key)
    sub_before = Subscription(b.url, api_key, task.id)  # spans the outage
    sockets = [client]
    took: dict[str, float] = {}
    try:
        assert client.recv()["type"] == "STATE_SNAPSHOT"
        assert sub_before.next()[1]["result"]["kind"] == "task"  # it has joined its group

        our_redis.kill()

        # A socket opened on A now starts A's Tailer while Redis is down.
        client_a = Client(a.ws, api_key)
        sockets.append(client_a)
        assert client_a.recv()["type"] == "STATE_SNAPSHOT"

        # The write path does not depend on Redis: the change answers, and commits...
        started = time.monotonic()
        paused = rpc_a.result("tasks/pause", {"taskId": task.id, "reason": "redis is down"})
        took["pause answered"] = time.monotonic() - started
        assert paused["state"] == "paused-by-client"
        # ...and reaches sockets and streams by polling the database while Redis is away.
        version = version_of(task.id)
        took["B's socket saw the pause"] = _since(started, client.until_version, task.id, version)
        assert client.state["view"]["tasks"][task.id]["pause"]["reason"] == "redis is down"
        took["A's socket saw the pause"] = _since(started, client_a.until_version, task.id, version)
        sub_before.until_state("paused-by-client")
        took["B's stream saw the pause"] = sub_before.arrived["paused-by-client"] - started

        # A blocking send waits on the channel layer too: it must answer, not fail.
        text = {"kind": "text", "text": "sent while redis is down"}
        message = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [text]}
        started = time.monotonic()
        sent = rpc_a.result(
            "message/send",
            {
                "message": message,
                "configuration": {"blocking": True},
                "metadata": {"skill": "approval"},
            },
        )
        took["blocking send answered"] = time.monotonic() - started
        assert sent["kind"] == "task"
        client.until_version(sent["id"], version_of(sent["id"]))
        # A stream opened during the outage cannot join its group: it streams anyway.
        sub_during = Subscription(b.url, api_key, task.id)
        assert sub_during.next()[1]["result"]["status"]["state"] == "paused-by-client"

        started = time.monotonic()
        our_redis.start()
        took["redis restarted"] = time.monotonic() - started
        # Both Tailers (one per server) and B's streams (one subscription for both) re-join
        # their groups by themselves.
        took["Tailers re-joined"] = _since(started, our_redis.wait_for_members, VIEW_GROUP, 2)
        took["streams re-joined"] = _since(
            started, our_redis.wait_for_members, group_name(task.id), 1
        )

        started = time.monotonic()
        canceled = rpc_a.result("tasks/cancel", {"id": task.id})
        assert canceled["status"]["state"] == "canceled"
        version = version_of(task.id)
        took["B's socket saw the cancel"] = _since(started, client.until_version, task.id, version)
        took["A's socket saw the cancel"] = _since(
            started, client_a.until_version, task.id, version
        )
        for sub in (sub_before, sub_during):
            sub.until_state("canceled")
            assert sub.next() is None  # the stream ends with the task
        took["B's streams saw the cancel"] = (
            max(sub.arrived["canceled"] for sub in (sub_before, sub_during)) - started
        )
        for c in sockets:
            assert c.state["view"]["tasks"][task.id]["status"] == "canceled"
    finally:
        for c in sockets:
            c.close()
        rpc_a.http.close()
    print("\nredis restart, seconds:", json.dumps({k: round(v, 3) for k, v in took.items()}))

    # Nothing is lost: both changes are in the log, and each stream delivered every status
    # event after its starting point, in order, once.
    kinds = list(
        TaskEvent.objects.filter(task_id=task.id).order_by("id").values_list("kind", flat=True)
    )
    assert kinds[-2:] == ["paused", "canceled"], kinds
    status_ids = list(
        TaskEvent.objects.filter(task_id=task.id, kind__in=STATUS_KINDS)
        .order_by("id")
        .values_list("id", flat=True)
    )
    for sub in (sub_before, sub_during):
        first, *rest = [event_id for event_id, _ in sub.seen]
        assert rest == [i for i in status_ids if i > first], (sub.seen, status_ids)
    assert TaskEvent.objects.filter(task_id=sent["id"], kind="created").exists()

    # Neither server died, nor logged an error or a traceback (warnings are expected).
    for server in servers:
        assert server.proc.is_alive(), f"server {server.name} died"
        logged = server.logged()
        print(f"server {server.name} logged:\n{logged}")
        assert "Traceback" not in logged, logged
        assert not [ln for ln in logged.splitlines() if ln.startswith(("ERROR", "CRITICAL"))]
