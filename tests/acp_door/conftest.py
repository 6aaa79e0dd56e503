"""Fixtures for the ACP door: an API key, and `manage.py acp` processes driven by the
official SDK client (tests/acp_door/peer.py) against the test database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.db import connections

from a2a import api_keys
from tests.acp_door.peer import Peer, agent_env
from tests.dashboard.conftest import op, operator  # noqa: F401 (the dashboard's fixtures)


@pytest.fixture
def acp_key(transactional_db) -> str:
    _, token = api_keys.create_key("editor", ["read", "write", "agent"])
    return token


@pytest.fixture
def open_peer(django_db_blocker, tmp_path) -> Iterator[Callable[..., contextmanager]]:
    """open_peer(key, opted_in=…, forms=…) → a context manager of an initialized Peer.
    The agent's stderr goes to a file under tmp_path (shown when a test fails)."""
    opened: list[Peer] = []

    @contextmanager
    def make(key: str | None, *, opted_in=False, forms=False, initialize=True, **env):
        with django_db_blocker.unblock():
            connections.close_all()  # the agent process must not share our connections
        peer = Peer(
            agent_env(key, **env),
            opted_in=opted_in,
            forms=forms,
            log=tmp_path / f"acp-{len(opened)}.log",
        )
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
