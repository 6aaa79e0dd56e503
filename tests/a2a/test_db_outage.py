"""Issue 31, item 3: streams that end or recover after a database outage, and doors that
answer in their own protocol while it lasts.

After a full PostgreSQL restart, A2A SSE streams used to hang silently (an OperationalError
in a2a/protocol/stream.py ended the body without ending the response), an AG-UI run sent
RUN_ERROR and left the connection open, and /a2a answered Django's HTML 500 page.

The outage is real and of this test database only (the PostgreSQL server is shared):
ALLOW_CONNECTIONS false and every backend terminated, from an admin connection to the
`postgres` database, then ALLOW_CONNECTIONS true — what a restart does to the server's
clients. A real Daphne serves (tests/conftest.py start_daphne) with short intervals by
configuration: keep-alives every KEEPALIVE s, streams wait out OUTAGE s of outage.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from django.db import connection, connections

from a2a import services
from a2a.models import Task
from agui.models import AguiRun
from tests.conftest import AGENT, CLIENT, local_http, start_daphne, stop_daphne, user_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
postgres = pytest.mark.postgres

KEEPALIVE = 0.3
OUTAGE = 4.0  # a stream waits out this much outage, then ends with an error frame
RESUME_BOUND = 10.0  # docs/production.md: a stream goes on within this after the database is back
# A stream is never silent longer than KEEPALIVE: a read that waits this long means it hangs
# (issue 31: it did, for 60 s and more)
READ_TIMEOUT = 15
ENV = {
    "TASKDECK_STREAM_KEEPALIVE_SECONDS": str(KEEPALIVE),
    "TASKDECK_STREAM_OUTAGE_SECONDS": str(OUTAGE),
}


@pytest.fixture
def server(django_db_blocker) -> Iterator[str]:
    proc = start_daphne(django_db_blocker, environ=ENV)
    yield f"http://127.0.0.1:{proc.port.value}"
    stop_daphne(proc)


@pytest.fixture
def http(server, api_key) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {api_key}"}
    with local_http(base_url=server, timeout=30, headers=headers) as client:
        yield client


class Outage:
    """This test database refusing connections, its backends terminated (as a restart does)."""

    def __init__(self) -> None:
        settings = connection.settings_dict
        self.name = settings["NAME"]
        self.admin = psycopg.connect(
            host=settings["HOST"] or "127.0.0.1",
            port=settings["PORT"] or 5432,
            user=settings["USER"],
            password=settings["PASSWORD"] or None,
            dbname="postgres",
            autocommit=True,
        )

    def begin(self) -> None:
        connections.close_all()
        self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            [self.name],
        )

    def end(self) -> None:
        self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')
        connections.close_all()


@pytest.fixture
def outage() -> Iterator[Outage]:
    if connection.vendor != "postgresql":
        pytest.skip("emulates a PostgreSQL outage")
    o = Outage()
    try:
        yield o
    finally:
        o.end()
        o.admin.close()


class Frames:
    """An SSE body read frame by frame: ("comment", text) or ("data", event, id)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.iter_lines()

    def next(self) -> tuple:
        fields: dict[str, str] = {}
        for line in self.lines:
            if line.startswith(":"):
                return ("comment", line[1:].strip())
            if line == "":
                if fields:
                    return (
                        fields.get("event", "message"),
                        json.loads(fields["data"]),
                        fields.get("id"),
                    )
                continue
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        return ("end",)

    def until(self, wanted, deadline: float) -> list[tuple]:
        """Frames up to and including the first for which `wanted(frame)`."""
        seen = []
        while time.monotonic() < deadline:
            frame = self.next()
            seen.append(frame)
            if wanted(frame) or frame[0] == "end":
                return seen
        raise AssertionError(f"nothing wanted before the deadline: {seen}")


def _working_task() -> Task:
    task = services.create_task(user_message("deploy"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    return task


def _keepalives(frames: list[tuple]) -> int:
    return sum(1 for f in frames if f[0] == "comment")


def _rpc(http: httpx.Client, method: str, params: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return http.post("/a2a/", json=body)


def _open_streams(http, stack, task_id):
    """A JSON-RPC tasks/resubscribe and an HTTP+JSON :subscribe on the task."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": task_id}}
    rpc = stack.enter_context(http.stream("POST", "/a2a/", json=body, timeout=READ_TIMEOUT))
    rest = stack.enter_context(
        http.stream("POST", f"/a2a/rest/tasks/{task_id}:subscribe", timeout=READ_TIMEOUT)
    )
    assert (rpc.status_code, rest.status_code) == (200, 200)
    return Frames(rpc), Frames(rest)


def test_keepalive_comments_on_an_idle_stream(http):
    task = _working_task()
    with contextlib.ExitStack() as stack:
        rpc, rest = _open_streams(http, stack, task.id)
        for frames in (rpc, rest):
            deadline = time.monotonic() + 30
            frames.until(lambda f: f[0] == "message", deadline)  # the task first
            seen = frames.until(lambda f: f[0] == "comment", deadline)
            seen += frames.until(lambda f: f[0] == "comment", deadline)
            assert [f for f in seen if f[0] != "comment"] == []  # idle: nothing but comments
            assert _keepalives(seen) == 2


@postgres
def test_streams_go_on_after_an_outage_and_doors_answer_in_their_protocol(http, outage):
    task = _working_task()
    with contextlib.ExitStack() as stack:
        rpc, rest = _open_streams(http, stack, task.id)
        first_rpc = rpc.until(lambda f: f[0] == "message", time.monotonic() + 30)[-1]
        first_rest = rest.until(lambda f: f[0] == "message", time.monotonic() + 30)[-1]
        assert first_rpc[1]["result"]["id"] == task.id
        assert first_rest[1]["task"]["id"] == task.id
        outage.begin()
        try:
            # both streams stay alive (keep-alives) while they retry
            for frames in (rpc, rest):
                seen = frames.until(lambda f: f[0] == "comment", time.monotonic() + 10)
                assert _keepalives(seen) == 1 and len(seen) == 1, seen
            # a JSON-RPC call gets a JSON-RPC error, a REST call a JSON 503
            answer = _rpc(http, "tasks/get", {"id": task.id})
            assert answer.headers["Content-Type"].startswith("application/json")
            assert answer.status_code == 503 and answer.headers["Retry-After"]
            error = answer.json()["error"]
            assert error["code"] == -32603 and "database is unavailable" in error["data"]["detail"]
            rest_answer = http.get(f"/a2a/rest/tasks/{task.id}")
            assert rest_answer.status_code == 503
            assert rest_answer.headers["Content-Type"].startswith("application/json")
            assert rest_answer.json()["error"]["status"] == "UNAVAILABLE"
        finally:
            outage.end()
        services.complete_task(task.id, actor=AGENT, text="done")
        back = time.monotonic()
        for frames, state_of in (
            (rpc, lambda f: f[1].get("result", {}).get("status", {}).get("state")),
            (rest, lambda f: f[1].get("statusUpdate", {}).get("status", {}).get("state")),
        ):
            seen = frames.until(lambda f: f[0] == "message", back + RESUME_BOUND)
            events = [f for f in seen if f[0] != "comment"]
            assert len(events) == 1, events  # the rest: the completion once, nothing before it
            assert state_of(events[0]) in ("completed", "TASK_STATE_COMPLETED")
            assert frames.next() == ("end",)  # and the stream ends


@postgres
def test_streams_end_with_an_error_frame_when_the_outage_lasts(http, outage):
    task = _working_task()
    with contextlib.ExitStack() as stack:
        rpc, rest = _open_streams(http, stack, task.id)
        rpc.until(lambda f: f[0] == "message", time.monotonic() + 30)
        rest.until(lambda f: f[0] == "message", time.monotonic() + 30)
        outage.begin()
        try:
            began = time.monotonic()
            seen = rpc.until(lambda f: f[0] == "message", began + OUTAGE + 10)
            error = seen[-1][1]["error"]
            assert error["code"] == -32603 and "database" in error["data"]["detail"]
            assert rpc.next() == ("end",)
            seen = rest.until(lambda f: f[0] == "error", began + OUTAGE + 10)
            assert seen[-1][1]["error"]["status"] == "UNAVAILABLE"
            assert rest.next() == ("end",)
        finally:
            outage.end()


def _agui_run(http: httpx.Client, thread_id: str):
    body = {
        "threadId": thread_id,
        "runId": str(uuid.uuid4()),
        "messages": [{"id": "u1", "role": "user", "content": "Roll out"}],
        "forwardedProps": {"skill": "approval"},
    }
    return http.stream(
        "POST",
        "/agui/run",
        json=body,
        headers={"Accept": "text/event-stream"},
        timeout=READ_TIMEOUT,
    )


def _agui_types(frames: list[tuple]) -> list[str]:
    return [f[1]["type"] for f in frames if f[0] == "message"]


@postgres
def test_an_agui_run_goes_on_after_an_outage(http, outage):
    thread = str(uuid.uuid4())
    with _agui_run(http, thread) as response:
        frames = Frames(response)
        frames.until(
            lambda f: f[0] == "message" and f[1]["type"] == "STATE_SNAPSHOT", time.monotonic() + 30
        )
        task = Task.objects.get()  # the run's, the test's only task
        outage.begin()
        try:
            seen = frames.until(lambda f: f[0] == "comment", time.monotonic() + 10)
            assert _agui_types(seen) == []
        finally:
            outage.end()
        services.start_task(task.id, actor=AGENT)
        services.complete_task(task.id, actor=AGENT, text="done")
        seen = frames.until(
            lambda f: f[0] == "message" and f[1]["type"].startswith("RUN_"),
            time.monotonic() + RESUME_BOUND,
        )
        assert _agui_types(seen)[-1] == "RUN_FINISHED"
        assert frames.next() == ("end",)


@postgres
def test_an_agui_run_ends_with_run_error_and_closes_when_the_outage_lasts(http, outage):
    thread = str(uuid.uuid4())
    with _agui_run(http, thread) as response:
        frames = Frames(response)
        frames.until(
            lambda f: f[0] == "message" and f[1]["type"] == "STATE_SNAPSHOT", time.monotonic() + 30
        )
        outage.begin()
        try:
            seen = frames.until(
                lambda f: f[0] == "message" and f[1]["type"].startswith("RUN_"),
                time.monotonic() + OUTAGE + 10,
            )
            assert seen[-1][1]["type"] == "RUN_ERROR" and seen[-1][1]["code"] == "unavailable"
            assert frames.next() == ("end",)  # the connection closes after RUN_ERROR
        finally:
            outage.end()
    # the outcome the database could not take then is recorded once it is back (a run left
    # without one would keep its task's AG-UI log from retention)
    deadline = time.monotonic() + RESUME_BOUND
    while AguiRun.objects.get().outcome != "error":
        assert time.monotonic() < deadline, "the run's outcome was never recorded"
        time.sleep(0.1)
