"""Push fixtures: agent workers for one module, a real webhook (stdlib HTTP server on
127.0.0.1, recording every request), settings that allow loopback webhooks in this
process, and an `unchanged()` that also covers push configs, deliveries and queued jobs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django_tasks_db.models import DBTaskResult

from a2a.push.models import PushConfig, PushDelivery
from tests.runtime.conftest import Processes, start, workers_running  # noqa: F401


@pytest.fixture(scope="module")
def runtime(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Processes]:
    """Two workers and a scheduler (tests/runtime's Processes) for one module only, so
    they neither drive the hand-made tasks of other modules nor linger beside the
    workers of tests/runtime."""
    with workers_running(django_db_blocker, tmp_path_factory.mktemp("push-runtime-logs")) as procs:
        yield procs


@dataclass
class Hit:
    at: float
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any
    status: int  # what the webhook answered

    @property
    def event_id(self) -> int:
        return int(self.headers["x-taskdeck-event-id"])


@dataclass
class Webhook:
    """A webhook receiver. `script` lists the statuses of the next answers (then 200);
    `delay` makes every answer that late."""

    port: int = 0
    hits: list[Hit] = field(default_factory=list)
    script: list[int] = field(default_factory=list)
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def delivered(self) -> list[Hit]:
        with self.lock:
            return [h for h in self.hits if 200 <= h.status < 300]

    def wait_for(self, predicate: Callable[[], object], timeout: float = 30.0, what=""):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"webhook: timed out waiting for {what}; got {self.hits}")
            time.sleep(0.02)


def _handler(hook: Webhook):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if hook.delay:
                time.sleep(hook.delay)
            with hook.lock:
                status = hook.script.pop(0) if hook.script else 200
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                hook.hits.append(
                    Hit(
                        time.monotonic(),
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        status,
                    )
                )
            self.send_response(status)
            if status in (301, 302, 307, 308):
                self.send_header("Location", f"http://127.0.0.1:{hook.port}/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):  # keep test output clean
            pass

    return Handler


def start_webhook() -> tuple[Webhook, ThreadingHTTPServer]:
    hook = Webhook()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hook))
    server.daemon_threads = True
    server.block_on_close = False
    hook.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return hook, server


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook, server = start_webhook()
    yield hook
    server.shutdown()
    server.server_close()


@pytest.fixture
def allow_private(settings) -> None:
    """Loopback webhooks are allowed in this process (worker processes get the same from
    TASKDECK_PUSH_ALLOW_PRIVATE in tests/runtime/conftest.py FAST)."""
    settings.TASKDECK = {
        **settings.TASKDECK,
        "PUSH": {**settings.TASKDECK["PUSH"], "ALLOW_PRIVATE": True},
    }


@pytest.fixture
def forbid_private(settings) -> None:
    settings.TASKDECK = {
        **settings.TASKDECK,
        "PUSH": {**settings.TASKDECK["PUSH"], "ALLOW_PRIVATE": False},
    }


def push_state() -> dict[str, Any]:
    return {
        "configs": list(PushConfig.objects.order_by("id").values()),
        "deliveries": list(PushDelivery.objects.order_by("id").values()),
        "jobs": DBTaskResult.objects.count(),
    }


@pytest.fixture
def unchanged(unchanged) -> Callable[[], Any]:
    """The shared `unchanged()`, plus push configs, deliveries and queued jobs."""

    @contextmanager
    def check():
        before = push_state()
        with unchanged():
            yield
        assert push_state() == before, "an error path changed push data"

    return check
