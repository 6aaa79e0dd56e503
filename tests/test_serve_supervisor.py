"""`manage.py serve` as a supervisor (dashboard/supervisor.py; issue 31, item 1), with real
processes and real signals: a child killed with SIGKILL is back within 10 s while the web
answers within 5 s; one that keeps dying is given up on while the rest serve; when no web
process is left all stop; a taken port is refused at start, naming it; SIGTERM stops every
child within the grace. /healthz shows what the supervisor knows (a2a/supervision.py).

One `serve` (two web processes, two workers, scheduler, gRPC, ACP host) is shared by
the module's tests; its last test stops it with SIGTERM. Backoffs are short
(--restart-backoff) so nothing waits long. Its database is SQLite in a temporary var dir, in the
SQLite lane only (`any_database`): supervising processes does not depend on the database,
and the PostgreSQL lane is the longer one. Everything is awaited by polling with a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from dashboard.supervisor import Child, Policy, StartupFailed, Supervisor
from tests.conftest import LOCAL_TLS, unconfigured_environ

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.any_database


def wait_for(what: str, check: Callable[[], Any], within: float) -> Any:
    """Poll `check` until it returns something true; fail naming `what` after `within` s."""
    deadline = time.monotonic() + within
    while True:
        if found := check():
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (dead, not yet reaped) is not alive
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> dict[str, str]:
    var = tmp_path_factory.mktemp("serve")
    env = unconfigured_environ()
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        TASKDECK_DEBUG="0",
        TASKDECK_ALLOWED_HOSTS="127.0.0.1",
        TASKDECK_VAR_DIR=str(var),
        TASKDECK_CALL_THREADS="2",  # dashboard/call_threads.py, lowered (off by default)
        TASKDECK_CALL_NICE="5",
    )
    migrated = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr
    return env


@dataclass
class Serve:
    proc: subprocess.Popen
    port: int
    output: Path
    status_file: Path

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def status(self) -> dict[str, Any] | None:
        """The supervisor's status file, read directly (the web may be down)."""
        with contextlib.suppress(OSError, ValueError):
            return json.loads(self.status_file.read_text())
        return None

    def children(self) -> dict[str, dict[str, Any]]:
        status = self.status() or {"children": []}
        return {c["name"]: c for c in status["children"]}

    def healthz(self) -> dict[str, Any] | None:
        """/healthz from the web, or None when it does not answer (a new connection each
        time, so the kernel may hand it to either web process)."""
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.get(f"http://127.0.0.1:{self.port}/healthz", verify=LOCAL_TLS, timeout=2)
            if answer.status_code == 200:
                return answer.json()
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def start_serve(env: dict[str, str], name: str, *options: str) -> Serve:
    port = free_port()
    output = Path(env["TASKDECK_VAR_DIR"]) / f"{name}.log"
    with output.open("w") as out:  # a file, not a pipe: nobody need drain it
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port), *options],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # a stray signal of the test run does not reach it
        )  # fmt: skip
    status_file = Path(env["TASKDECK_VAR_DIR"]) / f"serve-status-{port}.json"
    return Serve(proc, port, output, status_file)


def started(serve: Serve, within: float = 120) -> None:
    def up() -> bool:
        assert serve.proc.poll() is None, f"serve ended:\n{serve.log()[-3000:]}"
        return "serve: started" in serve.log()

    wait_for("serve started", up, within)


@pytest.fixture(scope="module")
def serve(environment) -> Iterator[Serve]:
    grpc_port = free_port()
    running = start_serve(
        environment, "shared",
        "--web", "2", "--workers", "2", "--grpc-port", str(grpc_port), "--acp-hosts", "1",
        "--restart-backoff", "0.2", "--give-up-after", "3", "--give-up-window", "120",
        "--stop-grace", "10",
    )  # fmt: skip
    running.grpc_port = grpc_port  # type: ignore[attr-defined]
    try:
        started(running)
        yield running
    finally:
        running.stop()


def test_healthz_shows_every_child_of_serve(serve):
    answer = wait_for("/healthz answers", serve.healthz, 10)
    processes = answer["processes"]
    names = {c["name"] for c in processes["children"]}
    p = serve.port
    assert names == {
        f"web-{p}-1", f"web-{p}-2", "worker-1", "worker-2", "scheduler", "acp-host-1", "grpc",
    }, names  # fmt: skip
    assert processes["supervisor"] == serve.proc.pid
    for child in processes["children"]:
        assert child["state"] == "running" and alive(child["pid"]), child


def _threads(pid: int) -> list[tuple[str, int]]:
    """(system name, nice) of each thread of process `pid`, the main thread first."""
    found = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=lambda t: int(t) != pid):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            found.append((comm, int(stat.rsplit(")", 1)[1].split()[16])))  # field 19: nice
    return found


def test_a_web_process_runs_the_calls_below_its_live_view(serve):
    """dashboard/call_threads.py, set as `environment` sets it: in each web process the
    A2A calls' work runs on two threads five nice steps below the process, while its
    event loop and its projector thread (started before any call could start it) keep
    the process's priority."""
    with httpx.Client(base_url=f"http://127.0.0.1:{serve.port}", timeout=10) as client:
        for _ in range(8):  # refused (no key) by a call thread, where credentials are read
            answer = client.post("/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
            assert answer.status_code == 401, answer.text
            client.cookies.clear()
    webs = [c["pid"] for n, c in serve.children().items() if n.startswith("web-")]
    calls_seen = 0
    for pid in webs:
        threads = _threads(pid)
        base = threads[0][1]
        calls = [nice for comm, nice in threads if comm.startswith("taskdeck-call")]
        assert calls == [base + 5] * len(calls) and len(calls) <= 2, threads
        assert [nice for comm, nice in threads if comm == "taskdeck-projec"] == [base], threads
        calls_seen += len(calls)
    assert calls_seen, "no call thread in any web process"


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


@pytest.mark.parametrize("name", ["worker-1", "scheduler", "grpc", "acp-host-1", "web-{port}-1"])
def test_a_child_killed_is_back_while_the_web_answers(serve, name):
    """SIGKILL one child: the web answers within 5 s, and within 10 s the child runs again
    (a new pid, its restart counted; the gRPC port answers again), logged by name."""
    name = name.format(port=serve.port)
    before = serve.children()[name]
    assert before["state"] == "running", before
    os.kill(before["pid"], signal.SIGKILL)
    wait_for("the web answers", serve.healthz, 5)

    def back() -> dict[str, Any] | None:
        child = serve.children()[name]
        fresh = child["state"] == "running" and child["pid"] != before["pid"]
        return child if fresh and alive(child["pid"]) else None

    child = wait_for(f"{name} is back", back, 10)
    assert child["restarts"] == before["restarts"] + 1 and child["lastExit"] == "signal SIGKILL"
    if name == "grpc":
        wait_for("the gRPC port answers", lambda: _answers("127.0.0.1", serve.grpc_port), 10)
    log = serve.log()
    assert f"serve: {name} (pid {before['pid']}) died: signal SIGKILL" in log, log[-2000:]
    assert f"serve: {name} restarted (pid {child['pid']}" in log
    assert wait_for("/healthz shows it", serve.healthz, 5)["processes"]["children"]


def test_a_child_that_keeps_dying_is_given_up_on_and_the_rest_serve(serve):
    """worker-2 killed as often as --give-up-after allows (3): no longer restarted, the
    status says so ("degraded"), the web and the other worker go on."""
    for _ in range(3):
        pid = wait_for(
            "worker-2 running",
            lambda: (c := serve.children()["worker-2"])["state"] == "running" and c["pid"],
            10,
        )
        os.kill(pid, signal.SIGKILL)
        noted = lambda killed=pid: serve.children()["worker-2"]["pid"] != killed  # noqa: E731
        wait_for("worker-2's death noted", noted, 10)
    given_up = wait_for(
        "worker-2 given up on",
        lambda: (c := serve.children()["worker-2"])["state"] == "gave-up" and c,
        10,
    )
    assert given_up["pid"] is None and given_up["restarts"] == 2
    answer = wait_for("the web answers", serve.healthz, 5)
    assert answer["processes"]["status"] == "degraded"
    assert all(
        c["state"] == "running" for c in answer["processes"]["children"] if c["name"] != "worker-2"
    ), answer
    assert "worker-2" in serve.log() and "given up on" in serve.log()


def test_sigterm_stops_every_child_within_the_grace(serve):
    """Last: stops the shared serve. Every child is gone within --stop-grace (10 s; each
    gets SIGTERM, SIGKILL after the grace), serve exits 0 and removes its status file."""
    pids = [c["pid"] for c in serve.children().values() if c["pid"]]
    assert len(pids) >= 6
    serve.proc.send_signal(signal.SIGTERM)
    wait_for("serve exited", lambda: serve.proc.poll() is not None, 10 + 5)
    assert serve.proc.returncode == 0, serve.log()[-2000:]
    assert not [pid for pid in pids if alive(pid)]
    assert not serve.status_file.exists()


# --- a serve of its own: no web process left, all stop ----------------------------------


def test_when_every_web_process_is_given_up_on_all_stop(environment):
    """One web process (Daphne binding the port itself) and a scheduler: the web killed is
    restarted and answers again; killed as often as --give-up-after allows, it is given up
    on, and as nothing is left to serve, serve stops the scheduler and exits 1, saying so."""
    serve = start_serve(
        environment, "web-only",
        "--web", "1", "--workers", "0", "--grpc-port", "0",
        "--restart-backoff", "0.1", "--give-up-after", "2", "--give-up-window", "120",
    )  # fmt: skip
    try:
        started(serve)
        web = f"web-{serve.port}"
        first = serve.children()[web]["pid"]
        scheduler = serve.children()["scheduler"]["pid"]
        os.kill(first, signal.SIGKILL)
        second = wait_for(
            f"{web} is back",
            lambda: (
                (c := serve.children()[web])["state"] == "running"
                and c["pid"] != first
                and c["pid"]
            ),
            10,
        )
        wait_for("the restarted web answers", serve.healthz, 60)
        os.kill(second, signal.SIGKILL)
        wait_for("serve stopped", lambda: serve.proc.poll() is not None, 30)
        assert serve.proc.returncode == 1
        log = serve.log()
        assert f"serve: {web} (pid {second}) died: signal SIGKILL" in log, log[-2000:]
        assert "given up on" in log
        assert "every web process was given up on; stopping all" in log
        assert not alive(scheduler)
    finally:
        serve.stop()


# --- start-up: refused before anything starts, or stopped naming the child -----------------


@pytest.mark.parametrize("which", ["--port", "--grpc-port"])
def test_a_taken_port_is_refused_at_start_naming_the_port(environment, which):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = free_port()
        ports = {"--port": port, "--grpc-port": other} if which == "--port" else {
            "--port": other, "--grpc-port": port,
        }  # fmt: skip
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--workers", "0",
             *(str(x) for kv in ports.items() for x in kv)],
            cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode != 0
    what = "web, --port" if which == "--port" else "gRPC, --grpc-port"
    assert f"port {port} ({what}) on 127.0.0.1 is not free" in done.stderr, done.stderr
    assert "nothing was started" in done.stderr and "Taskdeck on" not in done.stdout


# --- the supervisor itself, with plain processes (no Django) --------------------------------

PY = sys.executable


def test_a_child_exiting_during_start_up_stops_all_naming_it(tmp_path):
    sleeper = Child("sleeper", [PY, "-c", "import time; time.sleep(60)"])
    broken = Child("broken", [PY, "-c", "import sys; sys.exit(3)"])
    supervisor = Supervisor(
        [sleeper, broken], env=os.environ, policy=Policy(startup_seconds=30), log=print
    )
    supervisor.spawn()
    with pytest.raises(StartupFailed, match=r"broken exited during start-up \(exit code 3"):
        supervisor.wait_started()
    assert not alive(sleeper.proc.pid)


def test_a_child_deaf_to_sigterm_is_killed_after_the_grace(tmp_path):
    """stop(): SIGTERM to each child, SIGKILL after --stop-grace to one that ignores it,
    and to what it started (its process group)."""
    ready = tmp_path / "ready"
    deaf = Child("deaf", [PY, "-c", (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(ready)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )])  # fmt: skip
    lines: list[str] = []
    supervisor = Supervisor(
        [deaf],
        env=os.environ,
        policy=Policy(startup_seconds=0, stop_grace=0.5),
        log=lines.append,
        status_file=tmp_path / "status.json",
    )
    supervisor.spawn()
    supervisor.wait_started()
    grandchild = int(
        wait_for("the child started its own", lambda: ready.exists() and ready.read_text(), 10)
    )
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(supervisor.supervise()))
    thread.start()
    supervisor.stop()
    thread.join(timeout=30)
    assert result == [0]
    assert deaf.proc.returncode == -signal.SIGKILL
    # SIGKILL is delivered asynchronously: the grandchild (no child of ours) dies soon after
    wait_for("the child's own process killed", lambda: not alive(grandchild), 10)
    assert any("still running 0.5 s after SIGTERM; killing it" in line for line in lines), lines
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["children"][0]["state"] == "stopped"
