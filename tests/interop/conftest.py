"""Fixtures for driving the live Taskdeck with the official a2a-sdk client.

The SDK lives in its own virtualenv (.venv-interop, made by `make interop-venv`): its import
name is `a2a`, the same as our Django app, so it never enters this process. `sdk.run(...)`
and `sdk.spawn(...)` start tests/interop/client_script.py with that interpreter.

Bindings: the SDK client talks to each A2A binding Taskdeck serves (BINDINGS): JSON-RPC
and HTTP+JSON on a Daphne of this module's own, gRPC on a `manage.py run_grpc` process. That
Daphne's card lists the gRPC interface (TASKDECK["GRPC_ADDRESS"], set in its process only),
so the SDK finds all three where a user's SDK would: in the card. The session's
`asgi_server` is left as other suites expect it (no gRPC interface in its card).

Workers: these tests need real agent workers, but tests/push and tests/runtime sort after
this directory and start their own. A session-scoped `runtime` defined here would keep a
second set of workers alive through them (they would steal jobs from those suites'
workers), so this directory's `runtime` lives for the module and is stopped after it.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_daphne, stop_daphne
from tests.runtime.conftest import (  # noqa: F401  (start, jobs_finished_…: shared fixtures)
    DIE_WITH_US,
    Processes,
    _env,
    jobs_finished_before_the_flush,
    run_grpc,
    settle_tasks,
    start,
    wait_idle,
    workers_running,
)

ROOT = Path(__file__).resolve().parents[2]
INTEROP_PYTHON = ROOT / ".venv-interop" / "bin" / "python"
SCRIPT = Path(__file__).resolve().parent / "client_script.py"

# The SDK's names for the bindings (a2a.utils.constants.TransportProtocol), and test ids
BINDINGS = {"JSONRPC": "jsonrpc", "HTTP+JSON": "http_json", "GRPC": "grpc"}


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="module")
def runtime(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Processes]:
    """Two workers and a scheduler (tests/runtime's Processes) for this module only."""
    logs = tmp_path_factory.mktemp("interop-runtime-logs")
    with workers_running(django_db_blocker, logs) as procs:
        yield procs


@dataclass
class GrpcServer:
    """`manage.py run_grpc` for this module: its address, or why it did not start."""

    address: str = ""
    error: str = ""


@pytest.fixture(scope="module")
def grpc_server(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[GrpcServer]:
    """`manage.py run_grpc --port 0` on the test database. A server that does not start
    fails the gRPC cases only (the card then lists no gRPC interface)."""
    logs = tmp_path_factory.mktemp("interop-grpc-logs")
    with run_grpc(django_db_blocker, logs / "grpc.log") as (address, why):
        yield GrpcServer(address=address, error=why)


def _card_application(grpc_address: str):
    """The ASGI app, in Daphne's child process, with the gRPC interface in its card
    (settings changed in that process only: the tests' own settings stay as they are)."""
    from channels.routing import get_default_application
    from django.conf import settings

    if grpc_address:
        settings.TASKDECK["GRPC_ADDRESS"] = grpc_address
    return get_default_application()


@pytest.fixture(scope="module")
def a2a_server(grpc_server, django_db_setup, django_db_blocker) -> Iterator[str]:
    """Daphne serving the ASGI app for this module (JSON-RPC at /a2a/, HTTP+JSON at
    /a2a/rest, the card listing them and grpc_server's address); its base URL."""
    proc = start_daphne(
        django_db_blocker, functools.partial(_card_application, grpc_server.address)
    )
    yield f"http://127.0.0.1:{proc.port.value}"
    stop_daphne(proc)


@dataclass
class Live:
    """A running client_script: its JSON lines arrive on a queue as they are printed."""

    proc: subprocess.Popen
    lines: queue.Queue = field(default_factory=queue.Queue)
    seen: list[dict] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    pumps: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True),
        ]
        for pump in self.pumps:
            pump.start()

    def _pump(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))
        self.lines.put(None)  # EOF

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for pump in self.pumps:
            pump.join(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def next(self, timeout: float = 20.0, errors_fail: bool = True) -> dict | None:
        """The next line (None at EOF); fails after `timeout` seconds without one, and on
        an error the SDK raised unless `errors_fail` is false."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"the SDK client printed nothing for {timeout}s; so far: {self.seen}"
            ) from None
        if line is not None:
            self.seen.append(line)
            if errors_fail and "error" in line:
                raise AssertionError(f"the SDK client raised {line}")
        return line

    def until(self, predicate: Callable[[dict], bool], timeout: float = 20.0) -> dict:
        """Read events until one matches `predicate`; returns it."""
        while True:
            line = self.next(timeout)
            if line is None:
                raise AssertionError(f"the SDK client ended before the awaited event: {self.seen}")
            if "event" in line and predicate(line["event"]):
                return line["event"]

    def finish(self, timeout: float = 30.0) -> list[dict]:
        """Read to EOF; every line the process printed (also those read before)."""
        while self.next(timeout, errors_fail=False) is not None:
            pass
        rc = self.proc.wait(timeout=timeout)
        for pump in self.pumps:
            pump.join(timeout=10)
        assert rc == 0, f"client_script exited with {rc}: {''.join(self.stderr)}"
        return self.seen

    def events(self) -> list[dict]:
        return [line["event"] for line in self.seen if "event" in line]


@dataclass
class Sdk:
    """The official a2a-sdk client, as a user would drive it, against the live server."""

    base: str
    token: str
    binding: str = "JSONRPC"
    started: list[Live] = field(default_factory=list)

    def spawn(self, action: str = "", *, token: str | None = None, steps=(), **args) -> Live:
        """Start client_script with one action (or `steps`: (action, args) pairs run in
        one process, which saves an interpreter start each; a third item, a dict, may give
        the step its own "token" or "binding")."""
        command = {
            "base": self.base,
            "token": self.token if token is None else token,
            "binding": self.binding,
        }
        if steps:
            command["steps"] = [
                {"action": step[0], "args": step[1], **(step[2] if len(step) > 2 else {})}
                for step in steps
            ]
        else:
            command.update(action=action, args=args)
        proc = subprocess.Popen(
            # -I: isolated mode, so the repository's own `a2a/` can never shadow the SDK's
            [str(INTEROP_PYTHON), "-I", str(SCRIPT), json.dumps(command)],
            cwd="/",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        live = Live(proc)
        self.started.append(live)
        return live

    def steps(self, *steps: tuple, token: str | None = None) -> list[list]:
        """Run the steps to their end; for each, the lines it printed, ending with its
        {"done": true} or its {"error": ...}."""
        lines = self.spawn(token=token, steps=steps).finish(timeout=60)
        out: list[list[dict]] = [[]]
        for line in lines:
            out[-1].append(line)
            if "done" in line or "error" in line:
                out.append([])
        assert out[-1] == [] and len(out) == len(steps) + 1, lines
        return out[:-1]

    def run(self, action: str, *, token: str | None = None, **args: Any) -> list[dict]:
        """Run one action; the lines it printed."""
        (lines,) = self.steps((action, args), token=token)
        return lines

    def events(self, action: str, **args: Any) -> list[dict]:
        """Run one action that must succeed; the events it printed."""
        lines = self.run(action, **args)
        assert lines[-1] == {"done": True}, lines
        return [line["event"] for line in lines if "event" in line]


def _require_interop_venv() -> None:
    if INTEROP_PYTHON.exists():
        return
    reason = (
        f"{INTEROP_PYTHON.relative_to(ROOT)} is missing: `make interop-venv` installs the "
        "official a2a-sdk client there"
    )
    if _in_ci():
        pytest.fail(f"{reason} (CI=true: the interop tests may not be skipped)")
    pytest.skip(reason)


@contextmanager
def _client(base: str, token: str, binding: str = "JSONRPC") -> Iterator[Sdk]:
    _require_interop_venv()
    client = Sdk(base, token, binding)
    try:
        yield client
    finally:
        for live in client.started:
            live.close()


@pytest.fixture(params=list(BINDINGS), ids=list(BINDINGS.values()))
def binding(request, grpc_server) -> str:
    """Each test that uses the SDK runs once per binding (the SDK's name for it)."""
    if request.param == "GRPC" and grpc_server.error:
        pytest.fail(grpc_server.error)
    return request.param


@pytest.fixture
def sdk(a2a_server, api_key, binding) -> Iterator[Sdk]:
    """The SDK client over `binding`, with a valid API key (read, write, agent scopes)."""
    with _client(a2a_server, api_key, binding) as client:
        yield client


@pytest.fixture
def jsonrpc_sdk(a2a_server, api_key) -> Iterator[Sdk]:
    """The SDK client over JSON-RPC only, with a valid API key: for what only that binding
    has (the 0.3 wire format)."""
    with _client(a2a_server, api_key) as client:
        yield client


@pytest.fixture(scope="module")
def sdk_cards(a2a_server) -> dict[str, list[dict]]:
    """What the SDK made of our agent card (public: no key needed) for each binding, asked
    once, in one process: binding -> the lines it printed (the card, or the error)."""
    with _client(a2a_server, "") as client:
        out = client.steps(*[("card", {}, {"binding": b}) for b in BINDINGS])
    return dict(zip(BINDINGS, out, strict=True))


@pytest.fixture
def settle(runtime, transactional_db) -> Iterator[Callable[[str], str]]:
    """settle(task_id) registers a task the SDK created; teardown cancels it if still active
    and waits until no worker holds it (the next test's flush must meet idle workers)."""
    made: list[str] = []

    def track(task_id: str) -> str:
        made.append(task_id)
        return task_id

    yield track
    settle_tasks(made)
