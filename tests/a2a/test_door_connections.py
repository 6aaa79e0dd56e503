"""The A2A doors' database connections on PostgreSQL (a2a/db_faults.py,
`with_fresh_connection`): a call on a connection that answered one a moment ago goes
without the health check's `SELECT 1` (a round trip more per call), and a connection the
server ended in the meantime is still found out before the call uses it: the call is
answered, on a new one. Driven through the real ASGI application, as a server drives it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections
from django.db.backends.postgresql.base import DatabaseWrapper

from a2a import api_keys
from a2a.auth import authenticate
from tests.a2a.test_protocol_handler import Exchange
from tests.conftest import end_backend, user_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def token(transactional_db) -> Iterator[str]:
    _, raw = api_keys.create_key("door", ["read", "write"])
    yield raw
    for pid in _door_backends():  # the door threads' connections outlive the test's loop
        end_backend(pid)


@pytest.fixture
def pings(monkeypatch) -> Iterator[list[int]]:
    """The health checks' pings, as the backend pid each was sent on."""
    made: list[int] = []
    real = DatabaseWrapper.is_usable

    def is_usable(self) -> bool:
        made.append(self.connection.info.backend_pid if self.connection else 0)
        return real(self)

    monkeypatch.setattr(DatabaseWrapper, "is_usable", is_usable)
    yield made


def _task_of(token: str) -> str:
    from a2a import services

    actor = authenticate(f"Bearer {token}").actor
    return services.create_task(user_message("hello"), actor=actor, skill="batch").id


def _get(token: str, task_id: str, times: int = 1) -> list[dict]:
    """GetTask `times` in a row, in one event loop (the door's threads are its executor's;
    this test's own reads stay on this thread's connection)."""

    async def calls() -> list[dict]:
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
        bodies = []
        for _ in range(times):
            status, body = await Exchange(call, token).answer()
            assert status == 200, body
            bodies.append(body)
        return bodies

    return asyncio.run(calls())


def _door_backends(*besides: int) -> set[int]:
    """The backends of this test database other than this thread's and `besides`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return {row[0] for row in cursor.fetchall()} - set(besides)


def test_calls_in_a_row_send_no_health_check_ping(token, pings):
    task_id = _task_of(token)
    bodies = _get(token, task_id, times=5)
    assert [b["result"]["id"] for b in bodies] == [task_id] * 5
    assert pings == []


def test_a_connection_the_server_ended_is_pinged_and_replaced(token, pings):
    task_id = _task_of(token)
    mine = connection.connection.info.backend_pid  # this test's own connection

    async def twice() -> list:
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
        first = await Exchange(call, token).answer()
        door = await aside(_door_backends, mine)  # the door's connection, alive
        for pid in door:  # as a restart or an idle timeout would end it
            await aside(end_backend, pid)
        second = await Exchange(call, token).answer()
        return [first, second, door]

    with ThreadPoolExecutor(1) as side:  # this test's reads meanwhile, off the door's threads

        async def aside(fn, *args):
            return await asyncio.get_running_loop().run_in_executor(side, fn, *args)

        try:
            first, second, door = asyncio.run(twice())
        finally:
            side.submit(connections.close_all).result()
    assert first[0] == 200 and first[1]["result"]["id"] == task_id
    assert door
    # answered, not -32603 / HTTP 503: the connection found dead by its ping, replaced
    assert second[0] == 200 and second[1]["result"]["id"] == task_id
    assert pings and set(pings) <= door
    assert _door_backends().isdisjoint(door)
