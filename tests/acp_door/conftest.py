"""Fixtures for the ACP door: an API key, and door processes driven by the official SDK
client (tests/acp_door/peer.py) against the test database — `manage.py acp` (stdio), or
the remote door: the relay (a2a/acp_door/relay.py, as served by GET /acp/relay.py) run
with no database settings and no way to import the project, talking to a live Daphne.

A test of the door's behaviour takes the doors with `@DOORS` (it then gets `transport` =
"stdio" | "remote", and `open_peer` opens that kind of door); a module-scoped fixture or a
parametrize of its own takes `params=TRANSPORTS`. Which doors, by `doors_under_test()`:
`make test` runs each door's flows once per run and each database's once — the SQLite lane
the stdio door (`manage.py acp`), the PostgreSQL lane the remote door (the relay before
Daphne; its scale-out shape, two web processes where a test uses two). Both doors in one
run: TASKDECK_TEST_DOORS=both (or =stdio / =remote for one), e.g.
`TASKDECK_TEST_DOORS=both .venv/bin/pytest tests/acp_door`. Tests only one door can prove
(test_remote.py, the stdio redirections of test_wire.py) are not parametrised and run as
they are."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.db import connection, connections

from a2a import api_keys
from tests.a2a.test_db_outage import outage  # noqa: F401 (test_outage.py's)
from tests.acp_door.peer import Peer, agent_env
from tests.conftest import start_daphne, stop_daphne, unconfigured_environ
from tests.dashboard.conftest import op, operator  # noqa: F401 (the dashboard's fixtures)


@pytest.fixture
def acp_key(transactional_db) -> str:
    _, token = api_keys.create_key("editor", ["read", "write", "agent"])
    return token


def doors_under_test() -> list[str]:
    """The doors this run exercises: TASKDECK_TEST_DOORS (both | stdio | remote) when set,
    else by the test database — "remote" on PostgreSQL, "stdio" on SQLite — so that the two
    lanes of `make test` run each door once (read at collection: the settings' engine)."""
    chosen = os.environ.get("TASKDECK_TEST_DOORS", "").strip().lower()
    if chosen == "both":
        return ["stdio", "remote"]
    if chosen in ("stdio", "remote"):
        return [chosen]
    if chosen:
        raise pytest.UsageError(f"TASKDECK_TEST_DOORS={chosen!r}: both, stdio or remote")
    return ["remote"] if connection.vendor == "postgresql" else ["stdio"]


TRANSPORTS = doors_under_test()
DOORS = pytest.mark.parametrize("transport", TRANSPORTS)
# The remote door's server: the settings the stdio door gets from agent_env (a short line
# limit for tests/acp_door/test_wire.py, the quick ACP poll of tests/runtime's FAST).
REMOTE_ENVIRON = {"TASKDECK_ACP_MAX_LINE_BYTES": "4096", "TASKDECK_ACP_POLL_SECONDS": "0.05"}


@pytest.fixture
def transport() -> str:
    """The door `open_peer` opens: stdio unless the test is parametrised (`@DOORS`)."""
    return "stdio"


@pytest.fixture(scope="session")
def acp_servers(django_db_setup, django_db_blocker) -> Iterator[Callable[..., str]]:
    """acp_servers(**environ) → the URL of a Daphne serving dashboard.asgi (so /acp/) with
    REMOTE_ENVIRON and `environ`: one process per distinct environ (and `instance`: a
    second web process with the same settings, as `make scale-out` runs several), started
    on first use and kept for the session (a fork of this process: it starts in about a
    second)."""
    running: dict[tuple, object] = {}

    def server(instance: int = 1, **environ: str) -> str:
        wanted = {**REMOTE_ENVIRON, **environ}
        key = (instance, *sorted(wanted.items()))
        if key not in running:
            running[key] = start_daphne(django_db_blocker, what="ACP Daphne", environ=wanted)
        return f"http://127.0.0.1:{running[key].port.value}"

    yield server
    for proc in running.values():
        stop_daphne(proc)


@pytest.fixture(scope="session")
def relay_file(acp_servers, tmp_path_factory) -> Path:
    """The relay as a user gets it: downloaded from the server, alone in a directory."""
    response = httpx.get(acp_servers() + "/acp/relay.py", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith(
        "text/x-python"
    )
    path = tmp_path_factory.mktemp("relay-only") / "taskdeck-acp.py"
    path.write_bytes(response.content)
    return path


def relay_env(api_key: str | None, **extra: str) -> dict[str, str]:
    """The relay's environment: no DATABASE_URL, REDIS_URL, DJANGO_* or TASKDECK_* (but the
    key), and a PYTHONPATH that holds no project module (the relay's own directory)."""
    env = unconfigured_environ()
    env.pop("PYTHONPATH", None)
    if api_key:
        env["TASKDECK_API_KEY"] = api_key
    env.update(extra)
    return env


def relay_command(relay: Path, server: str, *args: str) -> list[str]:
    """The relay run by a Python that has `websockets` (and, in this virtualenv, Django
    too: tests/acp_door/test_remote.py shows the relay imports none of it)."""
    return [sys.executable, str(relay), "--server", server, *args]


@pytest.fixture
def open_peer(
    django_db_blocker, tmp_path, transport, request
) -> Iterator[Callable[..., contextmanager]]:
    """open_peer(key, opted_in=…, forms=…) → a context manager of an initialized Peer,
    of the door `transport` names. The agent's (or relay's) stderr goes to a file under
    tmp_path (shown when a test fails). `env` is for the stdio door's process only."""
    opened: list[Peer] = []

    @contextmanager
    def make(key: str | None, *, opted_in=False, forms=False, initialize=True, **env):
        with django_db_blocker.unblock():
            connections.close_all()  # the agent process must not share our connections
        log = tmp_path / f"acp-{len(opened)}.log"
        if transport == "remote":
            assert not env, "the remote door's settings are the server's (acp_servers)"
            relay = request.getfixturevalue("relay_file")
            server = request.getfixturevalue("acp_servers")()
            peer = Peer(
                relay_env(key),
                opted_in=opted_in,
                forms=forms,
                log=log,
                command=relay_command(relay, server),
                cwd=relay.parent,
            )
        else:
            peer = Peer(agent_env(key, **env), opted_in=opted_in, forms=forms, log=log)
        opened.append(peer)
        with peer:
            if initialize:
                peer.initialize()
            yield peer

    yield make
    for log in sorted(tmp_path.glob("acp-*.log")):
        text = log.read_text(errors="replace")
        if "Traceback" in text:
            print(f"--- {log.name}\n{text[-4000:]}")
    # every update and answer a test's client read was one the SDK's schema models take
    assert [p.errors for p in opened] == [[] for _ in opened]
