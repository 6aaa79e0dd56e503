"""The supervisor inside `manage.py serve`: starts its children, restarts one that dies,
gives up on one that keeps dying, and stops them all on SIGTERM/SIGINT within a bound.

Start-up. Every child is spawned, then start-up lasts until each child has been up for
`startup_seconds` and every port a child binds itself answers (Daphne's with one web
process per port, the gRPC process's). A child that exits before that stops start-up: all
are stopped and `StartupFailed` names the child and how it ended. (Ports already taken are
refused before anything starts, naming the port: dashboard/management/commands/serve.py.)

After start-up, a child that dies is restarted after a backoff: `backoff` seconds after
its first death, doubling with each further death within `window`, up to `backoff_max`.
A death is logged with the child's name, pid, exit code or signal and its restart count.
A child that exits `give_up_after` times within `window` is given up on: it stays down and
the status says "degraded" — the rest keep serving, as they can without it (a worker: the
others run the tasks; the scheduler: deadlines and takeovers wait; gRPC or the ACP host:
that door is closed). The web processes are essential: when every one of them has been
given up on there is nothing left to serve, so all stop and `run` returns 1.

What it knows goes to the status file on every change (a2a/supervision.py), which
/healthz shows.

Each child runs in a session (process group) of its own, so a Ctrl+C in the terminal
reaches only `serve`, which stops each child once. When a child dies, whatever is left in
its group (a killed ACP host's agents) is killed before it is started again; on stop,
each child gets SIGTERM, and after `stop_grace` seconds its whole group gets SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a.supervision import write_status

TICK = 0.1  # how often children are looked at
FD = "{fd}"  # in a Child's command: the descriptor of the socket made for it


@dataclass(frozen=True)
class Policy:
    backoff: float = 0.5
    backoff_max: float = 30.0
    give_up_after: int = 5
    window: float = 60.0
    startup_seconds: float = 2.0
    startup_timeout: float = 120.0  # a port not answering by then fails start-up
    stop_grace: float = 10.0


@dataclass
class Child:
    name: str
    command: list[str]
    # a socket made afresh for each start (a web process of `--web N`): handed over as the
    # descriptor FD names in `command`, and closed here once the child has it
    listener: Callable[[], socket.socket] | None = None
    # (host, port) it binds itself: start-up waits until it answers
    binds: tuple[str, int] | None = None
    essential: bool = False  # a web process
    proc: subprocess.Popen | None = None
    state: str = "starting"
    restarts: int = 0
    last_exit: str | None = None
    started: float = 0.0
    restart_at: float = 0.0
    exits: deque[float] = field(default_factory=deque)

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.proc.pid if self.proc and self.state in ("starting", "running") else None,
            "state": self.state,
            "restarts": self.restarts,
            "lastExit": self.last_exit,
        }


class StartupFailed(Exception):
    pass


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def answers(host: str, port: int) -> bool:
    """Does something accept connections on host:port (a wildcard host: on loopback)?"""
    host = host.strip("[]")
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class Supervisor:
    def __init__(
        self,
        children: list[Child],
        *,
        env: Mapping[str, str],
        policy: Policy,
        log: Callable[[str], None],
        status_file: Path | None = None,
    ) -> None:
        self.children = children
        self.env = dict(env)
        self.policy = policy
        self.log = log
        self.status_file = status_file
        self.stopping = False

    def stop(self, *_: Any) -> None:
        """Ask `run` to stop every child and return (a signal handler)."""
        self.stopping = True

    # -- the children ------------------------------------------------------------------

    def _spawn(self, child: Child) -> None:
        if child.listener is None:
            child.proc = subprocess.Popen(child.command, start_new_session=True, env=self.env)
        else:
            with child.listener() as handed:
                fd = str(handed.fileno())
                command = [fd if part == FD else part for part in child.command]
                child.proc = subprocess.Popen(
                    command, start_new_session=True, pass_fds=(handed.fileno(),), env=self.env
                )
        child.started = time.monotonic()

    def _write(self) -> None:
        if self.status_file is not None:
            write_status(self.status_file, os.getpid(), [c.status() for c in self.children])

    def _reap(self, child: Child) -> bool:
        """Has `child` died? Then note how, and clear what it left in its group."""
        assert child.proc is not None
        if child.proc.poll() is None:
            return False
        child.last_exit = how_it_ended(child.proc.returncode)
        _kill_group(child.proc.pid)
        return True

    # -- start-up ----------------------------------------------------------------------

    def spawn(self) -> None:
        """Start every child; StartupFailed (all stopped) when one cannot be (its port
        taken meanwhile, its program missing)."""
        for child in self.children:
            try:
                self._spawn(child)
            except OSError as exc:
                self._stop_all()
                raise StartupFailed(f"{child.name} could not be started: {exc}") from exc
        self._write()

    def wait_started(self) -> None:
        """Wait out start-up; StartupFailed (all stopped) when a child exits or a port does
        not answer in time."""
        began = time.monotonic()
        pending = {c.name for c in self.children}
        while pending:
            if self.stopping:
                return
            now = time.monotonic()
            for child in self.children:
                if self._reap(child):
                    self._stop_all()
                    raise StartupFailed(
                        f"{child.name} exited during start-up ({child.last_exit}; its own "
                        f"output above says why); stopped all"
                    )
                if child.name not in pending or now - child.started < self.policy.startup_seconds:
                    continue
                if child.binds is None or answers(*child.binds):
                    pending.discard(child.name)
                    child.state = "running"
                    self._write()
                elif now - began > self.policy.startup_timeout:
                    self._stop_all()
                    host, port = child.binds
                    raise StartupFailed(
                        f"{child.name} did not listen on {host}:{port} within "
                        f"{self.policy.startup_timeout:g} s; stopped all"
                    )
            time.sleep(TICK)

    # -- supervising -------------------------------------------------------------------

    def _died(self, child: Child, now: float, died: str) -> None:
        window = self.policy.window
        child.exits.append(now)
        while child.exits and now - child.exits[0] > window:
            child.exits.popleft()
        if len(child.exits) >= self.policy.give_up_after:
            child.state = "gave-up"
            self.log(
                f"serve: {died}; it exited {len(child.exits)} times within {window:g} s, "
                f"so it is given up on (after {child.restarts} restarts): no longer restarted"
            )
            return
        delay = min(self.policy.backoff_max, self.policy.backoff * 2 ** (len(child.exits) - 1))
        child.state = "restarting"
        child.restart_at = now + delay
        self.log(f"serve: {died}; restart {child.restarts + 1} in {delay:g} s")

    def supervise(self) -> int:
        """Until stopped: restart the dead, give up on the hopeless. 0 when stopped by a
        signal, 1 when every web process was given up on."""
        while not self.stopping:
            now = time.monotonic()
            changed = False
            for child in self.children:
                if child.state in ("running", "starting") and self._reap(child):
                    assert child.proc is not None
                    self._died(
                        child, now, f"{child.name} (pid {child.proc.pid}) died: {child.last_exit}"
                    )
                    changed = True
                elif child.state == "restarting" and now >= child.restart_at:
                    changed = True
                    child.restarts += 1
                    try:
                        self._spawn(child)
                    except OSError as exc:  # counts as one more death
                        child.last_exit = f"not started: {exc}"
                        self._died(child, now, f"{child.name} could not be started: {exc}")
                        continue
                    child.state = "running"
                    self.log(
                        f"serve: {child.name} restarted (pid {child.proc.pid}, "
                        f"restart {child.restarts})"
                    )
            if changed:
                self._write()
            web = [c for c in self.children if c.essential]
            if web and all(c.state == "gave-up" for c in web):
                self.log("serve: every web process was given up on; stopping all")
                self._stop_all()
                return 1
            time.sleep(TICK)
        self._stop_all()
        return 0

    def run(self) -> int:
        """spawn, wait_started and supervise; the status file removed at the end."""
        try:
            self.spawn()
            self.wait_started()
            return self.supervise()
        finally:
            self.close()

    def close(self) -> None:
        if self.status_file is not None:
            self.status_file.unlink(missing_ok=True)

    # -- stopping ----------------------------------------------------------------------

    def _stop_all(self) -> None:
        """SIGTERM to every live child; SIGKILL to each group after the grace."""
        live = [c for c in self.children if c.proc is not None and c.proc.poll() is None]
        for child in live:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.policy.stop_grace
        for child in live:
            try:
                child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log(
                    f"serve: {child.name} (pid {child.proc.pid}) still running "
                    f"{self.policy.stop_grace:g} s after SIGTERM; killing it"
                )
        for child in live:  # the dead were cleared when they died (_reap)
            _kill_group(child.proc.pid)  # what is left of it, and anything it started
            child.proc.wait()
        for child in self.children:
            if child.state != "gave-up":
                child.state = "stopped"
        self._write()
