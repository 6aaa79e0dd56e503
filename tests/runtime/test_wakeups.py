"""Waiting is cheap: processes wake each other instead of polling, and the poll is only
the fallback.

The workers here poll the job table every 30 s and the web server's own polls (a blocking
send's, the dashboards' reader's) are 30 s too, so whatever happens within the bound
below happened because a process was woken: an idle worker by the doorbell (PostgreSQL
LISTEN/NOTIFY, or a local wake-up on SQLite), the web server by an announcement (Redis, or
the local relay on the embedded default). Bounds are behavioural (a third of the poll),
never timings: the figures live in bench/send_latency.py and bench/agui_fanout.py.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max
from websockets.sync.client import connect

from a2a import api_keys, localwake, services
from a2a.models import Task
from a2a.runtime import doorbell, executor, settle
from a2a.runtime.models import RunLease, WorkerBeat
from agui import fanout
from tests.conftest import CLIENT, LOCAL_TLS, start_daphne, stop_daphne, user_message
from tests.runtime.conftest import Processes, settle_tasks, wait_for, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_POLL = 30.0  # the workers' --interval and the web server's own polls, here
PROMPT = 10.0  # a third of it: anything within this was woken, not polled


@pytest.fixture(scope="module")
def slow_polling(runtime: Processes, django_db_blocker) -> Iterator[Processes]:
    """The session's workers replaced, for this module, by two that poll every 30 s."""
    runtime.stop_all()
    slow = ("run_worker", "--interval", str(SLOW_POLL), "--no-startup-delay", "--no-reload")
    runtime.workers += [runtime._spawn("worker", *slow) for _ in range(2)]
    runtime.start_scheduler()
    with django_db_blocker.unblock():
        for proc in runtime.workers:
            wait_for(
                lambda pid=proc.pid: WorkerBeat.objects.filter(worker__endswith=f":{pid}").exists(),
                30,
                "a slow-polling worker to start",
            )
    try:
        yield runtime
    finally:
        runtime.stop_all()
        runtime.start_worker()
        runtime.start_worker()
        runtime.start_scheduler()


@pytest.fixture
def made() -> Iterator[list[str]]:
    """Task ids a test made; cancelled and released by their worker afterwards."""
    ids: list[str] = []
    yield ids
    settle_tasks(ids)


def tck_task(made: list[str], message_id: str) -> str:
    """A task for the conformance agent: `tck-complete-task-…` completes at once, other
    ids leave it working and idle (a2a/runtime/agents/tck.py)."""
    message = services.IncomingMessage(
        message_id=message_id, parts=[{"kind": "text", "text": "wake up"}]
    )
    task = services.create_task(message, actor=CLIENT, skill="tck", metadata={"skill": "tck"})
    made.append(task.id)
    return task.id


@pytest.fixture(scope="module")
def deaf_server(django_db_blocker) -> Iterator[str]:
    """A web server whose own polls (a blocking send's, the dashboards' reader's) wait
    30 s: only an announcement from another process can wake it sooner. It runs no agent
    itself (the conformance agent is inline: TASKDECK_INLINE_RUNS=0 here), so a blocking
    send's run is a worker's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(settings.TASKDECK["RUNTIME"], "INLINE", False)
        patch.setattr(settle, "POLL", SLOW_POLL)
        patch.setattr(fanout, "FALLBACK_POLL", SLOW_POLL)
        proc = start_daphne(django_db_blocker)  # forked: it keeps the patched polls
    try:
        yield f"http://127.0.0.1:{proc.port.value}"
    finally:
        stop_daphne(proc)


def test_an_idle_worker_starts_each_new_run_at_once_without_its_poll(slow_polling, made):
    for _ in range(3):
        # idle first: a worker polls once more right after marking its job done, then
        # waits (30 s, or until the doorbell rings)
        wait_for(lambda: not DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).exists())
        task_id = tck_task(made, f"tck-complete-task-{uuid.uuid4().hex[:8]}")
        wait_state(task_id, "completed", timeout=PROMPT)


def test_a_run_handed_back_after_a_fault_is_retried_after_its_back_off_not_at_the_poll(
    slow_polling, made
):
    task_id = tck_task(made, f"stays-working-{uuid.uuid4().hex[:8]}")
    wait_for(
        lambda: RunLease.objects.filter(task_id=task_id, owner="", slices=1).exists(),
        PROMPT,
        "the first slice to leave the task working and idle",
    )
    # what a worker does when the database fails under a run: a deferred job (0.5 s)
    executor.retry_later(task_id, OperationalError("the database restarted"))
    job_id = RunLease.objects.get(task_id=task_id).job_id
    assert DBTaskResult.objects.get(pk=job_id).run_after != get_date_max()  # deferred
    retry = wait_for(
        lambda: DBTaskResult.objects.filter(pk=job_id, status=TaskResultStatus.SUCCESSFUL).first(),
        PROMPT,
        "the deferred retry to run",
    )
    assert retry.started_at >= retry.run_after  # not before its back-off
    assert RunLease.objects.get(task_id=task_id).slices == 2
    assert Task.objects.get(pk=task_id).events.filter(kind="retrying").count() == 1


def test_a_blocking_send_hears_the_workers_answer_at_once(slow_polling, deaf_server):
    _, token = api_keys.create_key("waker", ["read", "write"])
    message_id = f"tck-complete-task-{uuid.uuid4().hex[:8]}"
    params = {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "go"}]},
        "metadata": {"skill": "tck"},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    # the web server rings an idle worker; the worker's completion wakes the waiting send
    answer = httpx.post(
        f"{deaf_server}/a2a/", verify=LOCAL_TLS, json=body, headers=headers, timeout=PROMPT
    )
    task = answer.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    wait_idle(task["id"])


def test_a_blocking_send_to_a_conversation_returns_when_the_worker_lets_go(
    slow_polling, deaf_server
):
    """The agent leaves the task working (it waits for the next message): no event says
    so, only the worker's release of the task, which it announces."""
    _, token = api_keys.create_key("talker", ["read", "write"])
    params = {
        "message": {
            "role": "user",
            "messageId": f"conversation-{uuid.uuid4().hex[:8]}",
            "parts": [{"kind": "text", "text": "hello"}],
        },
        "metadata": {"skill": "tck"},
        "configuration": {"blocking": True},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params}
    headers = {"Authorization": f"Bearer {token}"}
    answer = httpx.post(
        f"{deaf_server}/a2a/", verify=LOCAL_TLS, json=body, headers=headers, timeout=PROMPT
    )
    task = answer.json()["result"]
    assert task["status"]["state"] == "working"
    assert RunLease.objects.filter(task_id=task["id"], owner="").exists()  # it let go
    services.cancel_task(task["id"], actor=services.Actor("operator", "test"), reason="done")
    wait_idle(task["id"])


def test_a_workers_changes_reach_a_dashboard_socket_at_once(slow_polling, deaf_server, made):
    _, token = api_keys.create_key("dashboard", ["read", "operator"])
    url = deaf_server.replace("http://", "ws://") + "/ws/agui/"
    headers = {"Authorization": f"Bearer {token}", "Origin": "http://127.0.0.1"}
    with connect(url, additional_headers=headers, open_timeout=PROMPT) as ws:
        assert json.loads(ws.recv(timeout=PROMPT))["type"] == "STATE_SNAPSHOT"
        # made here, then driven by a worker: its steps and its completion are the
        # worker's commits, which only its pokes can bring to this server in time
        task = services.create_task(
            user_message("go"), actor=CLIENT, skill="batch",
            metadata={"skill": "batch", "items": 4, "pace": 4},
        )  # fmt: skip
        made.append(task.id)
        deadline = time.monotonic() + PROMPT
        status = None
        while status != "completed":
            event = json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            for op in event.get("delta", []) if event["type"] == "STATE_DELTA" else []:
                if op["path"] == f"/view/tasks/{task.id}/status":
                    status = op["value"]
                elif op["path"] == f"/view/tasks/{task.id}" and op["op"] == "add":
                    status = op["value"]["status"]
    wait_state(task.id, "completed")


def test_a_worker_waiting_for_jobs_stops_at_once_on_sigterm(slow_polling):
    worker = slow_polling.workers[-1]
    worker.send_signal(signal.SIGTERM)  # it is waiting on the doorbell, not sleeping 30 s
    assert worker.wait(timeout=PROMPT) == 0
    slow_polling.workers.remove(worker)


# --- the pieces ---------------------------------------------------------------------------


@pytest.fixture
def peer_inbox() -> Iterator[socket.socket]:
    """A `jobs` inbox as another worker process binds it (not this process's own)."""
    where = localwake.directory()
    assert where is not None, "local wake-ups are on by default"
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"jobs-peer-{uuid.uuid4().hex[:6]}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    yield sock
    sock.close()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def received(sock: socket.socket) -> list[bytes]:
    got = []
    with contextlib.suppress(BlockingIOError):
        while True:
            got.append(sock.recv(1024))
    return got


@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL rings with NOTIFY")
def test_a_job_rings_idle_workers_only_if_its_transaction_commits(peer_inbox):
    with pytest.raises(RuntimeError), transaction.atomic():
        doorbell.ring()
        raise RuntimeError("rolled back")
    assert received(peer_inbox) == []
    with transaction.atomic():
        doorbell.ring()
        assert received(peer_inbox) == []  # not before the commit
    assert received(peer_inbox) == [b""]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="NOTIFY is PostgreSQL's")
def test_a_job_notifies_listening_workers_only_if_its_transaction_commits():
    import psycopg

    listener = psycopg.connect(autocommit=True, **connection.get_connection_params())
    try:
        listener.execute(f"LISTEN {doorbell.CHANNEL}")
        with pytest.raises(RuntimeError), transaction.atomic():
            doorbell.ring()
            raise RuntimeError("rolled back")
        assert list(listener.notifies(timeout=0.2)) == []
        with transaction.atomic():
            doorbell.ring()
        notes = list(listener.notifies(timeout=PROMPT, stop_after=1))
        assert [n.channel for n in notes] == [doorbell.CHANNEL]
    finally:
        listener.close()


def test_a_dead_processs_inbox_is_removed_by_the_next_wake_up(peer_inbox):
    where = localwake.directory()
    dead = where / f"jobs-dead-{uuid.uuid4().hex[:6]}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(dead))
    sock.close()  # a SIGKILLed worker: the file stays, nobody reads it
    assert localwake.broadcast("jobs", b"x") >= 1  # the live one got it
    assert not dead.exists()
    assert received(peer_inbox) == [b"x"]


def test_a_process_does_not_wake_itself_and_cleans_up_its_inbox():
    inbox = localwake.Inbox("news")
    path = Path(inbox.path)
    assert path.exists()
    localwake.broadcast("news", b"self")
    assert inbox.drain() == []
    inbox.close()
    assert not path.exists()


def test_what_gone_processes_left_is_swept_when_a_process_binds(peer_inbox):
    root = localwake.directory().parent
    gone = root / "0000000000"  # a database nobody uses any more (an old test run's)
    gone.mkdir(exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(gone / "news-1-dead"))
    sock.close()  # its process was SIGTERMed before it could clean up
    inbox = localwake.Inbox("jobs")
    try:
        assert not gone.exists()
        peer = Path(peer_inbox.getsockname())
        assert peer.exists()  # alive: kept
    finally:
        inbox.close()


def test_with_local_wake_ups_off_nothing_is_bound_or_sent(settings):
    settings.TASKDECK = {**settings.TASKDECK, "RUNTIME": {**settings.TASKDECK["RUNTIME"]}}
    settings.TASKDECK["RUNTIME"]["WAKE_DIR"] = "off"
    assert localwake.directory() is None
    assert localwake.broadcast("jobs") == 0
    with pytest.raises(localwake.Unavailable):
        localwake.Inbox("jobs")


def test_a_bell_ends_its_wait_when_a_deferred_job_falls_due():
    bell = doorbell.Bell()
    started = time.monotonic()
    bell.heard(f"{time.time() + 0.3:.3f}")  # due in 0.3 s: nothing to do before
    bell.wait(SLOW_POLL)
    assert time.monotonic() - started < PROMPT
    bell.heard("")  # a job ready now
    started = time.monotonic()
    bell.wait(SLOW_POLL)
    assert time.monotonic() - started < PROMPT
