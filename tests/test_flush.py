"""The transactional tests' flush (tests/flush.py): it empties every table
but content types and permissions, and one that PostgreSQL aborts as a deadlock's victim is
run again (workers and the scheduler query the test database while tests flush it)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.contrib.auth.models import Group, Permission, User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from tests.flush import emptied_tables
from tests.runtime.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def flush_as_a_test_ends() -> None:
    case = TransactionTestCase()
    case.databases = {"default"}
    case._fixture_teardown()


def test_the_flush_empties_every_table_but_content_types_and_permissions():
    User.objects.create(username="left-over")
    permissions = Permission.objects.count()
    flush_as_a_test_ends()
    assert not User.objects.exists()
    assert Permission.objects.count() == permissions > 0


@pytest.mark.postgres
def test_a_flush_that_deadlocks_with_a_reader_is_run_again():
    """PostgreSQL checks a waiting backend for a deadlock once, deadlock_timeout after it
    starts to wait, and aborts the one whose check finds the cycle. So that it is the
    flush, the flush must close the cycle (wait last) with the shorter timeout: a holder
    keeps the flush waiting between the row the reader will ask for and the row the reader
    holds, and lets go only once the reader waits."""
    user = User.objects.create(username="left-over")
    user.groups.add(Group.objects.create(name="g"))
    Session.objects.create(session_key="k", session_data="", expire_date=timezone.now())
    order = emptied_tables()  # the order the flush deletes in
    assert order.index("auth_user") < order.index("auth_user_groups")
    assert order.index("auth_user_groups") < order.index("django_session")
    flusher = connection.cursor().connection
    flusher.execute("SET deadlock_timeout = '50ms'")
    reader, holder = _connect(), _connect()
    reader.execute("SET deadlock_timeout = '10s'")
    holder.execute("BEGIN")
    holder.execute("SELECT 1 FROM auth_user_groups FOR UPDATE")
    reader.execute("BEGIN")
    reader.execute("SELECT 1 FROM django_session FOR UPDATE")
    waiting = "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted"
    watcher = _connect()

    def waits(conn: psycopg.Connection) -> None:
        pid = conn.info.backend_pid
        wait_for(lambda: watcher.execute(waiting, (pid,)).fetchone(), 10, f"{pid} to wait")

    read: list[object] = []

    def read_the_deleted_user() -> None:
        # the flush has deleted the user and waits for the holder's row; the reader asks
        # for the user's row and waits for the flush
        waits(flusher)
        read.append(reader.execute("SELECT username FROM auth_user FOR UPDATE").fetchall())
        reader.execute("COMMIT")

    def let_go_once_the_reader_waits() -> None:
        # then the flush goes on to the session row the reader holds: a cycle it closes
        waits(reader)
        holder.execute("COMMIT")

    steps = (read_the_deleted_user, let_go_once_the_reader_waits)
    threads = [threading.Thread(target=step) for step in steps]
    for thread in threads:
        thread.start()
    try:
        flush_as_a_test_ends()
    finally:
        for thread in threads:
            thread.join(timeout=30)
        for conn in (reader, holder, watcher):
            conn.close()
    assert read == [[("left-over",)]]  # the flush was rolled back while the reader read
    assert not User.objects.exists() and not Session.objects.exists()


def _connect() -> psycopg.Connection:
    return psycopg.connect(autocommit=True, **connection.get_connection_params())
