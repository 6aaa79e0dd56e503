"""Real worker and scheduler processes against the test database.

Agents never run inline here: a test creates a task through the services, a `db_worker`
process (django-tasks-db's own command) picks the job up and runs the agent, and the test
watches the database. Timings are shortened by environment (delay scale, lease, poll)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from a2a import services, skills
from a2a.lifecycle import TERMINAL
from a2a.models import Task
from a2a.runtime.models import RunLease
from tests.acp_door.conftest import (  # noqa: F401 (fixtures)
    acp_key,
    acp_servers,
    op,
    open_peer,
    operator,
    relay_file,
    transport,
)
from tests.conftest import CLIENT, user_message
from tests.runtime.agents import asker, flaky, fragile, shifty

ROOT = Path(__file__).resolve().parents[2]
# The misbehaving test agents run in the workers (TASKDECK_EXTRA_AGENTS below); this process
# offers their skills too, so that the services accept tasks for them.
skills.register(lambda: [flaky.SKILL, shifty.SKILL, asker.SKILL, fragile.SKILL])
FAST = {
    "TASKDECK_AGENT_DELAY_SCALE": "0.05",
    "TASKDECK_LEASE_SECONDS": "2",
    "TASKDECK_POLL_SECONDS": "0.05",
    # the production default: at 0.1 s the schedulers of a `make test` run (3.3 ms of CPU a
    # tick, idle) took 133 s of CPU against the workers' 147, for deadlines met 0.15 s sooner
    "TASKDECK_SCHEDULER_INTERVAL": "0.25",
    "TASKDECK_REQUEUE_SECONDS": "2",
    "TASKDECK_BEAT_SECONDS": "0.25",
    "TASKDECK_DEAD_SECONDS": "1.5",
    "TASKDECK_RETRY_SECONDS": "0.1",
    # the production default (ACP doors re-read their tasks' log this often without Redis;
    # the ACP host's supervisors look for free sessions, which its bell rings them to): at
    # 0.05 s the ACP tests took 6-17 % more CPU in the same time (docs/testing.md)
    "TASKDECK_ACP_POLL_SECONDS": "0.25",
    "TASKDECK_EXTRA_AGENTS": "tests.runtime.agents.flaky,tests.runtime.agents.shifty,"
    "tests.runtime.agents.asker,tests.runtime.agents.fragile",
    # push: webhooks on 127.0.0.1 (the tests' own servers), quick retries
    "TASKDECK_PUSH_ALLOW_PRIVATE": "1",
    "TASKDECK_PUSH_BACKOFF_SECONDS": "0.2",
    "TASKDECK_PUSH_MAX_ATTEMPTS": "4",
    "TASKDECK_PUSH_TIMEOUT_SECONDS": "2",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(FAST)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        TASKDECK_TEST_DB_SUFFIX=os.environ.get("TASKDECK_TEST_DB_SUFFIX") or str(os.getpid()),
        TASKDECK_USE_TEST_DB="1",
        PYTHONUNBUFFERED="1",
    )
    return env


# How long a process may take to start serving (wait_serving): far above the 10-20 s a
# Django process took at a load average of 10-19, never reached when all is well.
STARTUP_SECONDS = 120.0

# The processes get SIGTERM when this test process dies (util-linux's setpriv sets
# PR_SET_PDEATHSIG, then execs the command): a killed pytest (Ctrl+C twice, a CI timeout)
# would otherwise leave its workers and scheduler polling a test database for ever.
DIE_WITH_US = ["setpriv", "--pdeathsig", "TERM"] if shutil.which("setpriv") else []


class Processes:
    """Workers and a scheduler, started and stopped (or killed) by tests."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.env: dict[str, str] = {}  # on top of FAST, for processes started from now on
        self.workers: list[subprocess.Popen] = []
        self.scheduler: subprocess.Popen | None = None

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        path = self.log_dir / f"{name}-{time.monotonic_ns()}.log"
        log = open(path, "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [*DIE_WITH_US, sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env={**_env(), **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        proc.log_path = path  # type: ignore[attr-defined]
        return proc

    def wait_serving(self, proc: subprocess.Popen, line: str) -> subprocess.Popen:
        """Until `proc` has written `line` (its start-up line: it serves from then on).

        Why: starting a Django process takes ~1 s on an idle machine and 10-20 s at a load
        average of 10-19 on 2 cores (issue 31). A test that waits for what the process
        does must not count its start-up against that wait's bound; it waits for the
        start-up here, with a bound of its own, and fails at once if the process died."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while line not in proc.log_path.read_text(errors="replace"):  # type: ignore[attr-defined]
            if proc.poll() is not None:
                raise AssertionError(f"{proc.args[-3:]} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{proc.args[-3:]} not serving after {STARTUP_SECONDS} s")
            time.sleep(0.05)
        return proc

    def start_worker(self) -> subprocess.Popen:
        # The doorbell starts new jobs at once (tests/runtime/test_wakeups.py); the poll is
        # the fallback, as in `manage.py serve`.
        proc = self._spawn(
            "worker", "run_worker", "--interval", "1", "--no-startup-delay", "--no-reload"
        )
        self.workers.append(proc)
        return proc

    def start_scheduler(self, *, wait: bool = True) -> subprocess.Popen:
        """A scheduler, returned once it ticks (its deadlines fire from then on); or at
        once (`wait=False`) when nothing waits for it before the next process is up."""
        self.scheduler = self._spawn(
            "scheduler", "run_scheduler", "--interval", FAST["TASKDECK_SCHEDULER_INTERVAL"]
        )
        return self.wait_serving(self.scheduler, "scheduler running") if wait else self.scheduler

    def kill(self, proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        proc.send_signal(sig)
        proc.wait(timeout=20)
        if proc in self.workers:
            self.workers.remove(proc)
        if proc is self.scheduler:
            self.scheduler = None

    def worker_with_pid(self, pid: int) -> subprocess.Popen:
        return next(p for p in self.workers if p.pid == pid)

    def stop_all(self) -> None:
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            proc.terminate()
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.workers, self.scheduler = [], None


@contextmanager
def workers_running(django_db_blocker, log_dir) -> Iterator[Processes]:
    """Two workers and a scheduler on the test database while the block runs. Marks
    them running (make_task refuses to hand-make tasks then) and restores the mark."""
    import tests.conftest as shared

    before = shared.WORKERS_RUNNING
    shared.WORKERS_RUNNING = True
    procs = Processes(log_dir)
    with django_db_blocker.unblock():
        connections.close_all()
    procs.start_worker()
    procs.start_worker()
    procs.start_scheduler()
    try:
        yield procs
    finally:
        procs.stop_all()
        shared.WORKERS_RUNNING = before


@pytest.fixture(scope="package")
def runtime(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Processes]:
    """Two workers and a scheduler while the package's tests run (tests/runtime; the browser
    lane imports it for tests/browser). Once workers run they pick up every runnable task
    (make_task refuses then), so they stop when the package is done: tests driving tasks by
    hand (tests/agui, tests/push, …) may run after it in one session, in any order."""
    with workers_running(django_db_blocker, tmp_path_factory.mktemp("runtime-logs")) as procs:
        yield procs


@pytest.fixture(autouse=True)
def jobs_finished_before_the_flush(request, django_db_blocker) -> Iterator[None]:
    """After a test that drives workers, wait (before its flush) until no job runs.

    A test may end the moment a blocking send returns, which is as soon as the task is
    settled: its worker is still releasing the lease and marking the job row done. A flush
    then would pull the row from under it, and django-tasks-db's worker dies on a row that
    vanished. A killed worker's RUNNING row is marked by the scheduler within
    DEAD_SECONDS, so this ends then too."""
    yield
    import tests.conftest as shared

    if not shared.WORKERS_RUNNING or request.node.get_closest_marker("django_db") is None:
        return
    with django_db_blocker.unblock():
        wait_jobs_finished()


def wait_jobs_finished() -> None:
    """Until no job row runs (at most 10 s): a worker marks its job done after it let the
    task go, and a flush in between pulls the row from under it (django-tasks-db's worker
    dies on it). A dead worker's row is marked by the scheduler, so this ends then too."""
    with contextlib.suppress(AssertionError):
        wait_for(
            lambda: not DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).exists(),
            10,
            "the workers to finish their jobs",
        )


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "") -> object:
    """Poll `predicate` until it returns something truthy (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(0.02)


def state(task_id: str) -> str:
    return Task.objects.filter(pk=task_id).values_list("state", flat=True).get()


def wait_state(task_id: str, *states: str, timeout: float = 30.0) -> str:
    return wait_for(
        lambda: (s := state(task_id)) in states and s,
        timeout,
        f"task {task_id} to reach {states} (now {state(task_id)})",
    )


def idle(task_id: str) -> bool:
    """No worker holds the task."""
    return not RunLease.objects.filter(task_id=task_id).exclude(owner="").exists()


def wait_idle(task_id: str, timeout: float = 30.0) -> None:
    wait_for(lambda: idle(task_id), timeout, f"task {task_id} to be released by its worker")


@pytest.fixture
def start(runtime, transactional_db) -> Iterator[Callable[..., Task]]:
    """start("batch", items=10) -> a new task of that skill, picked up by a worker.
    Teardown cancels what is still active and waits until no worker holds it, so the next
    test's flush meets idle workers."""
    made: list[str] = []

    def make(skill: str, text: str = "demo", **metadata) -> Task:
        task = services.create_task(
            user_message(text), actor=CLIENT, skill=skill, metadata={"skill": skill, **metadata}
        )
        made.append(task.id)
        return task

    yield make
    settle_tasks(made)


def settle_tasks(task_ids: list[str]) -> None:
    """Teardown for tasks workers drive: cancel what is still active, then wait until no
    worker holds any of them (the next test's flush must meet idle workers)."""
    for task_id in task_ids:
        if Task.objects.filter(pk=task_id).exclude(state__in=list(TERMINAL)).exists():
            services.cancel_task(task_id, actor=CLIENT, reason="test teardown")
    for task_id in task_ids:
        wait_idle(task_id)


@contextmanager
def run_grpc(django_db_blocker, log: Path) -> Iterator[tuple[str, str]]:
    """`manage.py run_grpc --port 0` on the test database (tests/grpc_door, tests/interop):
    yields (address, "") once it listens, or ("", why) when it did not start; stopped on
    exit. This process's connections are closed first: the child must not share them."""
    with django_db_blocker.unblock():
        connections.close_all()
    stderr = open(log, "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [*DIE_WITH_US, sys.executable, str(ROOT / "manage.py"), "run_grpc", "--port", "0"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # "gRPC: A2A 1.0 on 127.0.0.1:PORT"; "" if it died
        if line.startswith("gRPC: A2A 1.0 on "):
            yield line.rsplit(" ", 1)[1].strip(), ""
        else:
            proc.wait(timeout=10)
            stderr.flush()
            yield "", f"run_grpc did not start: {line}{log.read_text()}"
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=20)
        stderr.close()


def stream_tck(rpc, scenario: str) -> list[dict[str, Any]]:
    """A 1.0 SendStreamingMessage to the conformance agent with a `scenario` message id
    (a fresh suffix added), read to its end: the results of its SSE events, in order."""
    message = {
        "messageId": f"{scenario}-{uuid.uuid4().hex[:8]}",
        "role": "ROLE_USER",
        "parts": [{"text": "go"}],
    }
    params = {"message": message, "metadata": {"skill": "tck"}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": params}
    headers = {"Authorization": f"Bearer {rpc.token}", "A2A-Version": "1.0"}
    with rpc.http.stream("POST", "/a2a/", json=body, headers=headers, timeout=30) as response:
        return [
            json.loads(line[6:])["result"]
            for line in response.iter_lines()
            if line.startswith("data: ")
        ]
