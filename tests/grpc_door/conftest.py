"""A real `manage.py run_grpc` process and real agent workers on the test database, and a
client made of the generated stubs, as a gRPC client of Taskdeck has them.

The server is started with `--port 0` and says where it listens; the workers (and the
scheduler) are tests/runtime's, for this module only: once they run they pick up every
runnable task, so they stop before the suites that drive tasks by hand run on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from a2a.grpc_door.protos import a2a_pb2_grpc, pause_pb2_grpc
from a2a.models import Task
from tests.runtime.conftest import (  # noqa: F401 (a fixture, autouse)
    jobs_finished_before_the_flush,
    run_grpc,
    settle_tasks,
    workers_running,
)


@pytest.fixture(scope="module")
def grpc_address(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """`manage.py run_grpc --port 0` on the test database, with workers beside it; its
    address (host:port) once it listens."""
    logs = tmp_path_factory.mktemp("grpc-logs")
    with (
        workers_running(django_db_blocker, logs),
        run_grpc(django_db_blocker, logs / "grpc.log") as (address, why),
    ):
        if not address:
            raise RuntimeError(why)
        yield address


@dataclass
class Client:
    """The generated stubs on one channel, and the caller's metadata."""

    a2a: a2a_pb2_grpc.A2AServiceStub
    pause: pause_pb2_grpc.TaskdeckPauseServiceStub
    token: str

    def md(self, token: str | None = None, **extra: str) -> list[tuple[str, str]]:
        """Call metadata: the bearer key (none for token=""), plus `extra` entries."""
        token = self.token if token is None else token
        auth = [("authorization", f"Bearer {token}")] if token else []
        return auth + [(k.replace("_", "-"), v) for k, v in extra.items()]


@pytest.fixture
def client(grpc_address, api_key) -> Iterator[Client]:
    """A client with the `api_key` fixture's key (read, write, agent). Teardown settles the
    tasks the test made (cancels what is active, waits until no worker holds them), so the
    flush meets idle workers."""
    with grpc.insecure_channel(grpc_address) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        yield Client(
            a2a_pb2_grpc.A2AServiceStub(channel),
            pause_pb2_grpc.TaskdeckPauseServiceStub(channel),
            api_key,
        )
    settle_tasks(list(Task.objects.values_list("id", flat=True)))


def rpc_error(call: Any) -> grpc.RpcError:
    """The error a call ends with (fails the test when it succeeds)."""
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value
