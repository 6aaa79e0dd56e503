"""Fixtures of the fuzz tests: their own live Daphne, which writes every ERROR it logs
(a 500, a JSON-RPC handler that raised, an AG-UI run that failed) to a file the tests
read after each request, and keys and tasks to aim requests at."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
import pytest
from django.apps import apps

from a2a import api_keys, services
from a2a.lifecycle import State
from a2a.models import Suspension, Task
from tests.conftest import CLIENT, _to, local_http, start_daphne, stop_daphne, user_message
from tests.fuzz import support

STATES = [s.value for s in State]


def _no_fsync(sender, connection, **kwargs) -> None:
    """Commits without waiting for the disk: thousands of small writes, nothing to keep."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA synchronous = OFF")
        elif connection.vendor == "postgresql":
            cursor.execute("SET synchronous_commit TO OFF")


def _application(error_log: str):
    """Runs in the server process: short blocking sends (no worker runs here, so a
    blocking send would otherwise wait the full 25 s), commits without fsync, errors to
    a file."""
    from channels.routing import get_default_application
    from django.conf import settings
    from django.db.backends.signals import connection_created

    settings.TASKDECK["BLOCKING_SEND_SECONDS"] = 0.2
    connection_created.connect(_no_fsync)
    handler = logging.FileHandler(error_log)
    handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    return get_default_application()


@dataclass
class Server:
    url: str
    error_log: Path
    _offset: int = 0

    def new_errors(self) -> str:
        """What the server logged at ERROR since the last call."""
        if not self.error_log.exists():
            return ""
        with self.error_log.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        return data.decode(errors="replace")


@pytest.fixture(scope="session")
def fuzz_server(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Server]:
    """A Daphne of its own (like `asgi_server`, plus the error log and short blocking
    sends), against the test database."""
    error_log = tmp_path_factory.mktemp("fuzz") / "server-errors.log"
    proc = start_daphne(django_db_blocker, partial(_application, str(error_log)))
    yield Server(f"http://127.0.0.1:{proc.port.value}", error_log)
    stop_daphne(proc)


@pytest.fixture(autouse=True)
def _fresh_failures():
    support.FAILURES.clear()
    yield
    support.FAILURES.clear()


@pytest.fixture
def http(fuzz_server) -> Iterator[httpx.Client]:
    with local_http(base_url=fuzz_server.url, timeout=30) as client:
        yield client


@dataclass
class Keys:
    full: str  # read, write, agent
    read_only: str


@pytest.fixture
def keys(transactional_db) -> Keys:
    suffix = uuid.uuid4().hex[:8]
    _, full = api_keys.create_key(f"fuzz-{suffix}", ["read", "write", "agent"], owner="test-client")
    _, read_only = api_keys.create_key(f"fuzz-ro-{suffix}", ["read"], owner="test-client")
    return Keys(full, read_only)


@dataclass
class World:
    """Tasks to aim at: `task(state)` returns one of ours in that state, making a fresh
    one (through the services) when the fuzzing moved them all on."""

    made: list[str] = field(default_factory=list)

    def task(self, state: str) -> Task:
        task = (
            Task.objects.filter(pk__in=self.made, state=state)
            .select_related("current_suspension")
            .order_by("created_at")
            .last()
        )
        if task is None:
            task = services.create_task(user_message("fuzz target"), actor=CLIENT, skill="approval")
            _to(State(state), task.id)
            self.made.append(task.id)
            task = Task.objects.select_related("current_suspension").get(pk=task.id)
        return task

    def stale_handle(self) -> str:
        ended = Suspension.objects.exclude(ending="").values_list("handle", flat=True).first()
        return ended or "suspend-00000000-0000-0000-0000-000000000000"

    def lookup(self, ref: support.Ref) -> str:
        """The value a Ref stands for, now."""
        if ref.what == "stale-handle":
            return self.stale_handle()
        task = None if ref.state == "missing" else self.task(ref.state)
        if ref.what == "task":
            return task.id if task else f"task-{uuid.uuid4()}"
        if ref.what == "context":
            return task.context_id if task else str(uuid.uuid4())
        if ref.what == "handle":
            suspension = task.current_suspension if task else None
            return suspension.handle if suspension else f"suspend-{uuid.uuid4()}"
        if ref.what == "request":
            request = (task.input_request if task else None) or {}
            return request.get("requestId") or "req-none"
        if ref.what == "config":
            ids = _push_config_ids(task.id) if task else []
            return ids[ref.index % len(ids)] if ids else "cfg-none"
        raise ValueError(f"unknown ref {ref}")

    def resolve(self, value):
        """`value` with its Refs looked up (one lookup per distinct Ref)."""
        seen: dict[support.Ref, str] = {}

        def once(ref: support.Ref) -> str:
            if ref not in seen:
                seen[ref] = self.lookup(ref)
            return seen[ref]

        return support.resolve(value, once)


def _push_config_ids(task_id: str) -> list[str]:
    try:
        model = apps.get_model("push", "PushConfig")
    except LookupError:  # push notifications not installed
        return []
    return list(
        model.objects.filter(task_id=task_id).order_by("pk").values_list("config_id", flat=True)
    )


@pytest.fixture
def world(transactional_db) -> World:
    return World()


def pytest_terminal_summary(terminalreporter):
    if not support.STATS:
        return
    terminalreporter.section("fuzz requests")
    total = 0
    for surface, entry in sorted(support.STATS.items()):
        total += int(entry["requests"])
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(support.TALLY.get(surface, {}).items()))
        terminalreporter.write_line(
            f"{surface}: {int(entry['requests'])} requests, {entry['seconds']:.1f} s on the wire"
            + (f" ({outcomes})" if outcomes else "")
        )
    terminalreporter.write_line(f"total: {total} requests")


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
