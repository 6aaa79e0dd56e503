"""Shared fixtures: a live Daphne serving the real ASGI app, an HTTP JSON-RPC client,
and helpers that put tasks into a given state through `a2a.services`."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import SyncToAsync
from django.db import connection, connections, transaction

from a2a import api_keys, services
from a2a.lifecycle import State
from a2a.models import Artifact, Context, Message, MessageReceipt, Suspension, Task, TaskEvent
from agui import fanout
from tests import flush

AGENT = services.Actor("agent", "test-agent")
WORKERS_RUNNING = False  # set by tests/runtime's `runtime` fixture
# Tasks the tests make by hand belong to the `api_key` fixture's tenant, so that key (a
# restricted one, as clients' keys are) sees them over HTTP; tests/a2a/test_ownership.py
# covers what other keys see.
CLIENT = services.Actor("client", "test", tenant="key:test-client")


# The TLS settings of every HTTP client the suite makes. httpx builds a context for each
# client it makes (the CA bundle parsed: 20-28 ms of CPU), though the suite's clients speak
# plain HTTP to its own servers: a sixth of this process's CPU in tests/a2a (py-spy).
LOCAL_TLS = httpx.create_ssl_context()


@contextlib.contextmanager
def statements() -> Iterator[list[tuple[str, Any]]]:
    """The statements this thread's connection runs inside the block, with the parameters
    the driver gets (a plan is then read with them: `query_plan`)."""
    seen: list[tuple[str, Any]] = []

    def note(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(note):
        yield seen


def query_plan(sql: str, params: Any = None) -> str:
    """The plan of `sql` as one line: EXPLAIN on PostgreSQL, with sequential and bitmap
    scans off (the tests' handful of rows would have the planner read the table whatever
    indexes there are), EXPLAIN QUERY PLAN on SQLite."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute("EXPLAIN " + sql, params or None)
            return " ".join(str(row[0]) for row in cursor.fetchall())
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params or None)
        return " ".join(str(row[-1]) for row in cursor.fetchall())


def local_http(**kwargs: Any) -> httpx.Client:
    """An httpx.Client sharing LOCAL_TLS."""
    return httpx.Client(verify=LOCAL_TLS, **kwargs)


def local_async_http(**kwargs: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient sharing LOCAL_TLS."""
    return httpx.AsyncClient(verify=LOCAL_TLS, **kwargs)


def unconfigured_environ() -> dict[str, str]:
    """This process's environment without what configures Taskdeck or Django (the test
    settings' own, the database and Redis URLs): for a child process that a test configures
    from scratch, as a deployment would."""
    drop = ("TASKDECK_", "DJANGO_", "DATABASE_URL", "REDIS_URL")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def pytest_sessionstart(session):
    shape_faults()  # a killed earlier run with the same suffix may have left some


def pytest_sessionfinish(session, exitstatus):
    """The SQLite backend's queue file (dashboard/sqlite_backend) and SQLite's WAL files
    outlive the test database Django removes: remove them too. A wrong event shape written
    after the last test's check (by a worker finishing its job) fails the run."""
    from django.conf import settings

    late = shape_faults()
    if late:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "events written with a wrong shape", red=True)
            reporter.write_line(late)
    db = settings.DATABASES["default"]
    if "sqlite" in db["ENGINE"] and db.get("TEST", {}).get("NAME"):
        for suffix in (".writers", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{db['TEST']['NAME']}{suffix}")


flush.install()  # tests/flush.py says why


def shape_faults() -> str:
    """The wrong event shapes reported since the last call (by this process or the worker
    and scheduler processes tests start: tests/settings.py, EVENT_SHAPE_FAULTS), cleared."""
    from django.conf import settings

    path = Path(settings.EVENT_SHAPE_FAULTS)
    taken = path.with_name(path.name + ".taken")  # a fault written meanwhile starts anew
    try:
        os.replace(path, taken)
    except FileNotFoundError:
        return ""
    faults = taken.read_text(encoding="utf-8")
    taken.unlink()
    return faults


@pytest.fixture(autouse=True)
def events_have_their_shapes() -> Iterator[None]:
    """Every TaskEvent written while the test ran had its kind's shape
    (a2a.event_kinds.SHAPES), wherever it was written: a wrong one fails the test."""
    yield
    faults = shape_faults()
    if faults:
        pytest.fail(f"events written with a wrong shape:\n{faults}", pytrace=False)


class _ProjectionErrors(logging.Handler):
    """The errors the AG-UI projection logged in this process. A failed pass is logged,
    not raised (agui.projection: the task stays due, the sweep retries it), so without
    this a test whose writes the projector cannot project would still pass."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(self.format(record))


_PROJECTION_ERRORS = _ProjectionErrors()
logging.getLogger("agui.projection").addHandler(_PROJECTION_ERRORS)


@pytest.fixture(autouse=True)
def projection_passes_do_not_fail(request) -> Iterator[None]:
    """No projection pass of this process failed while the test ran, unless the test is
    marked `projection_fails` (it provokes failures and checks how they are handled)."""
    _PROJECTION_ERRORS.seen.clear()
    yield
    seen, _PROJECTION_ERRORS.seen = _PROJECTION_ERRORS.seen, []
    if seen and request.node.get_closest_marker("projection_fails") is None:
        pytest.fail("the AG-UI projection logged errors:\n" + "\n".join(seen), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that drove worker and scheduler processes reports what they logged
    while it ran (the last lines of each), with timestamps: CI keeps only pytest's output,
    and a runtime flake is rarely understood without the processes' side of it."""
    report = yield
    if call.when == "setup":
        item.stash[_STARTED] = time.time()
    if report.failed:
        from tests.runtime.conftest import Processes

        dirs = {v.log_dir for v in item.funcargs.values() if isinstance(v, Processes)}
        since = item.stash.get(_STARTED, 0.0)
        logs = [(p.stat(), p) for d in sorted(dirs) for p in d.glob("*.log")]
        for stat, path in sorted(logs, key=lambda log: log[0].st_mtime):
            if stat.st_mtime >= since and stat.st_size:
                tail = path.read_text(errors="replace").splitlines()[-_LOG_LINES:]
                report.sections.append((f"process log {path.name}", "\n".join(tail)))
    return report


_STARTED = pytest.StashKey[float]()
_LOG_LINES = 15


def discard_connections_left_mid_command() -> list[str]:
    """Close this thread's PostgreSQL connections that are still in the middle of a
    command, after cancelling that command on the server; return their aliases.

    Why: pytest-timeout interrupts a test with an exception raised from its SIGALRM
    handler, usually while the test polls the database (tests/runtime's wait_for), so the
    query is sent and its result never read. psycopg then refuses every later statement on
    that connection ("another command is already in progress"): the test's flush, and
    every test after it in the process, would fail. Closing alone is not enough: the
    server would keep running the statement (and holding its locks) until it ends, so it
    is cancelled first. Django reconnects on the next query (or, inside an atomic block,
    once the block is left: BaseDatabaseWrapper.close)."""
    from psycopg.pq import TransactionStatus

    broken = (TransactionStatus.ACTIVE, TransactionStatus.UNKNOWN)
    discarded = []
    for conn in connections.all(initialized_only=True):
        raw = conn.connection
        if conn.vendor != "postgresql" or raw is None or raw.closed:
            continue
        if raw.info.transaction_status not in broken:
            continue
        with contextlib.suppress(Exception):  # a dead connection has nothing to cancel
            raw.cancel_safe(timeout=5)
        try:
            conn.close()
        except Exception:  # the socket may be gone already: Django's bookkeeping matters
            with contextlib.suppress(Exception):
                raw.close()
            if not conn.in_atomic_block:
                conn.connection = None
        discarded.append(conn.alias)
    return discarded


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A connection left mid-command by the previous test's teardown is not this test's."""
    _discard_for(item, "setup")
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Before the test's fixtures are torn down (pytest-django's flush uses the connection)
    and after: a test interrupted mid-query (a timeout) fails alone, not every test after
    it (discard_connections_left_mid_command says why)."""
    _discard_for(item, "teardown")
    try:
        return (yield)
    finally:
        _discard_for(item, "teardown")


def _discard_for(item: pytest.Item, when: str) -> None:
    discarded = discard_connections_left_mid_command()
    if discarded:
        item.add_report_section(
            when,
            "database",
            f"closed the connection(s) {discarded}: left in the middle of a command "
            "(an interrupted query); the server's statement was cancelled",
        )


def pytest_collection_modifyitems(config, items):
    """`postgres`-marked tests skip on SQLite; on the PostgreSQL run nothing may skip them.
    `any_database`-marked tests (what they test does not touch the suite's database) run
    in the SQLite lane only: the PostgreSQL lane, the longer one, would repeat them."""
    on_postgres = connection.vendor == "postgresql"
    if os.environ.get("TASKDECK_EXPECT_POSTGRES") == "1" and not on_postgres:
        raise pytest.UsageError("TASKDECK_EXPECT_POSTGRES=1 but the database is not PostgreSQL")
    if on_postgres:
        once = pytest.mark.skip(reason="does not depend on the database: the SQLite lane runs it")
        for item in items:
            if "any_database" in item.keywords:
                item.add_marker(once)
    else:
        skip = pytest.mark.skip(reason="needs PostgreSQL (run with DATABASE_URL=postgres://…)")
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)


def _application():
    from channels.routing import get_default_application

    return get_default_application()


def _read_environ(environ: dict[str, str]) -> None:
    """In a forked child: take `environ` into its environment and settings.TASKDECK as a
    process started with it would (a2a.conf.read), keeping what the test settings set in
    Python (tests/settings.py) where the environment does not change it."""
    from django.conf import settings
    from django.test import override_settings

    from a2a import conf

    def changed(current: dict, before: dict, after: dict) -> dict:
        out = dict(current)
        for key, value in after.items():
            if isinstance(value, dict):
                out[key] = changed(current.get(key, {}), before.get(key, {}), value)
            elif value != before.get(key):
                out[key] = value
        return out

    before = conf.read(os.environ).taskdeck
    os.environ.update(environ)
    after = conf.read(os.environ).taskdeck
    # for the child's life; as an override, so a2a.conf's readers see it (setting_changed)
    override_settings(TASKDECK=changed(settings.TASKDECK, before, after)).enable()


def start_daphne(
    django_db_blocker,
    application=_application,
    what: str = "Daphne",
    environ: dict[str, str] | None = None,
):
    """A Daphne child process serving `application()` on a free port, against the test
    database; returns once it listens. This process's connections are closed first: a
    forked child must not share them. `environ`: TASKDECK_* variables the child runs with
    (the child is forked, so it reads them into its settings itself)."""
    from daphne.testing import DaphneProcess

    def in_child():
        # asgiref's one thread for thread-sensitive calls is the parent's: once a test has
        # used it (tests/a2a/test_run_races.py), the forked child's executor believes it
        # has a worker that does not exist there, and every database_sync_to_async call
        # (a socket's connect) waits forever. The child gets a thread of its own.
        SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
        if environ:
            _read_environ(environ)
        return application()

    with django_db_blocker.unblock():
        connections.close_all()
        proc = DaphneProcess("127.0.0.1", in_child)
        proc.daemon = True
        proc.start()
        while not proc.ready.wait(timeout=1):
            if not proc.is_alive():
                raise RuntimeError(f"{what} did not start")
    return proc


def stop_daphne(proc) -> None:
    if proc.is_alive():
        proc.terminate()
    proc.join(timeout=10)


# How long the test database's drop waits for the backends of the processes the suite
# stopped: PostgreSQL ends a backend shortly after its client's socket closes, not at once,
# and DROP DATABASE refuses a database any backend still uses (pytest then only warns, and
# leaves the database behind). A session still there after it belongs to a process the
# suite failed to stop, and is named in a warning, then ended. (In CI, 2026-11-28, two were
# this process's own: the AG-UI fan-out's reader and notices threads keep their
# connections, and code run in this process had used them; `fanout.release_threads`
# closes them first now.)
DROP_WAIT_SECONDS = 5.0


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's test database, dropped only once no other session uses it."""
    yield
    with django_db_blocker.unblock():
        fanout.release_threads()  # the fan-out's threads keep their connections
        if connection.vendor == "postgresql":
            _wait_for_other_sessions()


def _wait_for_other_sessions() -> None:
    """Until this process's connection is the test database's only one. A session still
    there after DROP_WAIT_SECONDS belongs to a process the suite failed to stop: it is
    named in a warning, then ended so that the drop goes ahead."""
    others = (
        "SELECT pid, application_name, state, left(query, 120) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + DROP_WAIT_SECONDS
    with connection.cursor() as cursor:
        while True:
            cursor.execute(others)
            left = cursor.fetchall()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for pid, *what in left:
            warnings.warn(f"a session outlived the suite's processes: {what}", stacklevel=1)
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    connections.close_all()


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker) -> Iterator[str]:
    """Daphne in a child process serving dashboard.asgi on a free port, against the test
    database. Tests that use it need `django_db(transaction=True)` so their rows commit."""
    proc = start_daphne(django_db_blocker)
    yield f"http://127.0.0.1:{proc.port.value}"
    stop_daphne(proc)


@dataclass
class Rpc:
    """A JSON-RPC client over real HTTP."""

    http: httpx.Client
    token: str

    def raw(self, body: Any, *, token: str | None = None, headers=None, path="/a2a/"):
        h = {"Authorization": f"Bearer {token or self.token}"} if token != "" else {}
        h.update(headers or {})
        if isinstance(body, bytes | str):
            return self.http.post(path, content=body, headers=h)
        return self.http.post(path, json=body, headers=h)

    def __call__(self, method: str, params: Any = None, *, id: Any = 1, **kw) -> dict:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            body["params"] = params
        response = self.raw(body, **kw)
        return response.json()

    def result(self, method: str, params: Any = None, **kw) -> Any:
        answer = self(method, params, **kw)
        assert "error" not in answer, answer
        return answer["result"]

    def error(self, method: str, params: Any = None, **kw) -> dict:
        answer = self(method, params, **kw)
        assert "error" in answer, answer
        return answer["error"]


@pytest.fixture
def api_key(transactional_db) -> str:
    _, token = api_keys.create_key("test-client", ["read", "write", "agent"])
    return token


@pytest.fixture
def rpc(asgi_server, api_key) -> Iterator[Rpc]:
    with local_http(base_url=asgi_server, timeout=30) as http:
        yield Rpc(http, api_key)


def answer(task: Task, values: dict) -> None:
    """Answer the task's open input request as an A2A client does: a message holding an
    a2a.input.response DataPart, through the services."""
    task.refresh_from_db()
    request_id = task.input_request["requestId"]
    data = {"type": "a2a.input.response", "requestId": request_id, "values": values}
    services.add_message(
        task.id,
        services.IncomingMessage(
            message_id=f"answer-{request_id}", parts=[{"kind": "data", "data": data}]
        ),
        actor=CLIENT,
    )


def user_message(text: str = "hello", **extra) -> services.IncomingMessage:
    import uuid

    return services.IncomingMessage(
        message_id=str(uuid.uuid4()), parts=[{"kind": "text", "text": text}], **extra
    )


APPROVAL_REQUEST = {
    "title": "Approve the plan",
    "fields": [
        {"name": "decision", "type": "approval", "required": True},
        {"name": "note", "type": "text"},
    ],
}


def _to(state: State, task_id: str) -> None:
    """Drive a fresh submitted task to `state` through the services."""
    if state is State.SUBMITTED:
        return
    if state is State.REJECTED:
        services.reject_task(task_id, actor=AGENT, reason="not for me")
        return
    services.start_task(task_id, actor=AGENT)
    if state is State.WORKING:
        return
    if state is State.INPUT_REQUIRED:
        services.request_input(
            task_id, actor=AGENT, explanation="Please approve", request=APPROVAL_REQUEST
        )
    elif state is State.AUTH_REQUIRED:
        services.request_input(task_id, actor=AGENT, explanation="Sign in", request={}, auth=True)
    elif state is State.PAUSED_BY_CLIENT:
        services.pause_task(task_id, actor=CLIENT, reason="review")
    elif state is State.PAUSED_BY_AGENT:
        services.park_task(task_id, actor=AGENT, reason="waiting on ci")
    elif state is State.COMPLETED:
        services.complete_task(task_id, actor=AGENT, text="done")
    elif state is State.FAILED:
        services.fail_task(task_id, actor=AGENT, reason="boom")
    elif state is State.CANCELED:
        services.cancel_task(task_id, actor=CLIENT, reason="no longer needed")


def task_maker() -> Callable[..., Task]:
    """make(state="working") -> a Task in that state, made through the services."""

    def make(state: str | State = State.SUBMITTED, text: str = "hello", **kw) -> Task:
        if WORKERS_RUNNING:
            pytest.fail(
                "make_task drives tasks by hand, but agent workers are running in this "
                "session and would drive them too: run this test before tests/runtime"
            )
        task = services.create_task(user_message(text), actor=CLIENT, skill="approval", **kw)
        _to(State(state), task.id)
        return Task.objects.get(pk=task.id)

    return make


@pytest.fixture
def make_task(transactional_db) -> Callable[..., Task]:
    """Tasks that commit (other processes — a live server, workers — can see them)."""
    return task_maker()


def db_state() -> dict[str, list]:
    """Everything a request could change, to compare before and after an error."""
    return {
        "tasks": list(Task.objects.order_by("id").values()),
        "messages": list(Message.objects.order_by("id").values()),
        "artifacts": list(Artifact.objects.order_by("id").values()),
        "suspensions": list(Suspension.objects.order_by("id").values()),
        "events": list(TaskEvent.objects.order_by("id").values_list("id", flat=True)),
        "contexts": list(Context.objects.order_by("pk").values_list("pk", "tenant")),
        "receipts": list(MessageReceipt.objects.order_by("id").values_list("id", flat=True)),
    }


@pytest.fixture
def unchanged() -> Callable[[], Any]:
    """`with unchanged(): ...` asserts the block changed no task data."""
    from contextlib import contextmanager

    @contextmanager
    def check():
        before = db_state()
        yield
        assert db_state() == before, "an error path changed the database"

    return check


@pytest.fixture
def hold_projection() -> Iterator[Callable[[], None]]:
    """`hold_projection()` holds the live view's projection off in this process from then
    on (agui.projection.wake unsubscribed): writers still commit their due rows, and nobody
    projects them until the test does (`agui.projection.project_due`) — what a process that
    died right after its commit leaves (no scheduler runs beside these tests: no sweep). The
    subscribers and their order are restored after the test."""
    from a2a import events
    from agui import projection

    before = list(events._on_commit)
    yield lambda: events.unsubscribe(projection.wake)
    events._on_commit[:] = before


def end_backend(pid: int) -> None:
    """The PostgreSQL server ends backend `pid` (as a restart or an idle timeout would),
    from a connection of its own; returns once it is gone (5 s at most)."""
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
    finally:
        other.close()
