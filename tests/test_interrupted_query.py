"""A test interrupted in the middle of a query (pytest-timeout raises from its SIGALRM
handler, usually while a test polls the database) fails alone: tests/conftest.py closes
the connection it left mid-command, after cancelling the statement on the server, so the
test's flush and every later test get a working connection instead of psycopg's "another
command is already in progress".

The interruption is real: a signal sent from another thread while the server runs
`pg_sleep`, whose handler raises, as pytest-timeout's does."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import psycopg
import pytest
from django.db import DatabaseError, connection
from psycopg.pq import TransactionStatus

from a2a.models import Task
from tests.runtime.conftest import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Interrupted(Exception):
    """What the signal handler raises (pytest-timeout's raises pytest.fail's exception)."""


def _interrupt(signum, frame) -> None:
    raise Interrupted


def _running(pid: int, probe: psycopg.Connection) -> bool:
    """The backend `pid` is running pg_sleep (seen from another connection)."""
    row = probe.execute(
        "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND state = 'active' AND query LIKE %s",
        (pid, "%pg_sleep%"),
    ).fetchone()
    return row is not None


@pytest.fixture
def probe(transactional_db) -> Iterator[psycopg.Connection]:
    """A connection of the test's own, outside Django, to watch the server with."""
    db = connection.settings_dict
    with psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"],
        host=db["HOST"],
        port=db["PORT"] or None,
        autocommit=True,
    ) as conn:
        yield conn


@pytest.fixture
def left_mid_command(probe) -> Iterator[dict[str, int]]:
    """The test records its backend's pid here. Torn down after tests/conftest.py's
    teardown hook and before pytest-django's flush: the connection is gone, the server's
    statement was cancelled (not left sleeping), and the next query works."""
    left: dict[str, int] = {}
    yield left
    assert connection.connection is None, "the connection left mid-command was kept"
    wait_for(lambda: not _running(left["pid"], probe), 10, "the statement to be cancelled")
    assert Task.objects.count() == 0  # a fresh connection, working


def test_a_query_interrupted_mid_command_leaves_the_next_query_a_working_connection(
    left_mid_command, probe
):
    pid = connection.cursor().connection.info.backend_pid
    left_mid_command["pid"] = pid
    main = threading.main_thread().ident

    def interrupt_once_running() -> None:
        wait_for(lambda: _running(pid, probe), 30, "pg_sleep to run")
        signal.pthread_kill(main, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, _interrupt)
    sender = threading.Thread(target=interrupt_once_running)
    try:
        sender.start()
        with pytest.raises(Interrupted), connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(60)")
    finally:
        sender.join(timeout=30)
        signal.signal(signal.SIGUSR1, previous)
    # what a timeout leaves behind: the statement sent, its answer never read
    assert connection.connection.info.transaction_status is TransactionStatus.ACTIVE
    with pytest.raises(DatabaseError, match="another command is already in progress"):
        Task.objects.count()
