"""A `redis-server` a test owns: on a free port of its own (never the machine's 6379, which
other test runs share), so it may kill, restart, freeze and thaw it.

Used by tests/agui/test_redis_restart.py (SIGKILL and restart) and
tests/a2a/test_frozen_redis.py (SIGSTOP and SIGCONT), whose Daphne children log to a file
of the test's with `log_to`. Import the fixture where it is used:
`from tests.redis_server import our_redis  # noqa: F401 (fixture)`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
import redis

WAIT = 15.0  # seconds: the most starting the server, or any expected change, may take


class RedisServer:
    """A `redis-server` subprocess this test owns, on a port of its own.

    Keyspace notifications for sorted sets (`Kz`) let a test wait, without polling, for a
    server to re-join a group (channels-redis keeps a group as a sorted set)."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        args = ["--save", "", "--appendonly", "no", "--port", str(self.port)]
        args += ["--bind", "127.0.0.1", "--notify-keyspace-events", "Kz"]
        self.proc = subprocess.Popen(
            [self.binary, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        ready = threading.Event()
        threading.Thread(target=self._drain, args=(self.proc, ready), daemon=True).start()
        if not ready.wait(WAIT):
            self.kill()
            raise RuntimeError(f"redis-server did not start on port {self.port}")

    @staticmethod
    def _drain(proc: subprocess.Popen[str], ready: threading.Event) -> None:
        """Read its log (a full pipe would block it); set `ready` when it accepts."""
        assert proc.stdout is not None
        for line in proc.stdout:
            if "Ready to accept connections" in line:
                ready.set()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a frozen process dies only once thawed
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=WAIT)

    def freeze(self) -> None:
        """SIGSTOP: the server keeps its port and accepts TCP connections (the kernel
        does), but answers nothing: a Redis hung by a stall, swap or a debugger."""
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT; safe to call twice, and on a server that is not frozen."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=WAIT)

    def wait_for_members(self, group: str, processes: int) -> float:
        """Block until `processes` processes listen to `group` again; returns the seconds
        waited. The pub/sub channel layer (dashboard.settings.redis_channel_layers)
        subscribes each process's connection to a group's Redis channel once, whatever
        the number of its listeners, so subscribers are processes."""
        from tests.runtime.conftest import wait_for  # polled: Redis tells nobody of it

        channel = f"asgi__group__{group}"
        started = time.monotonic()
        with contextlib.closing(self.client()) as r:
            wait_for(
                lambda: dict(r.pubsub_numsub(channel))[channel.encode()] >= processes,
                WAIT,
                f"{processes} processes to listen to {group} again",
            )
        return time.monotonic() - started


def log_to(path: str) -> None:
    """In a server child process: its stderr and every record at WARNING or above go to
    `path`, for the test to read (and find no error, traceback or unretrieved exception).

    The handler writes to the file itself: under pytest's capture sys.stderr is not fd 2
    but pytest's own file, so a handler on sys.stderr would log into pytest's capture and
    the test would read an empty log. fd 2 and sys.stderr point at the file too, for what
    is written there directly."""
    log = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    handler = logging.StreamHandler(log)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)


@pytest.fixture
def our_redis() -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.kill()
