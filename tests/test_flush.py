"""The transactional tests' flush (tests/flush.py): it empties every table
but content types and permissions, and one that PostgreSQL aborts as a deadlock's victim is
run again (workers and the scheduler query the test database while tests flush it)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from tests.flush import emptied_tables

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
    User.objects.create(username="left-over")
    Session.objects.create(session_key="k", session_data="", expire_date=timezone.now())
    # the flush deletes auth_user before django_session (it must, for the deadlock below)
    order = emptied_tables()
    assert order.index("auth_user") < order.index("django_session")
    flusher = connection.cursor().connection
    flusher.execute("SET deadlock_timeout = '50ms'")  # the flush is the victim
    params = connection.get_connection_params()
    reader = psycopg.connect(
        host=params["host"], port=params.get("port") or 5432, user=params["user"],
        dbname=connection.settings_dict["NAME"], autocommit=True,
    )  # fmt: skip
    reader.execute("SET deadlock_timeout = '10s'")
    reader.execute("BEGIN")
    reader.execute("SELECT 1 FROM django_session FOR UPDATE")
    waiting = "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted"
    read: list[object] = []

    def lock_what_the_flush_deleted() -> None:
        # the flush has deleted the user and waits for the session row the reader holds;
        # the reader now asks for the user's row: each waits for the other
        while not reader.execute(waiting, (flusher.info.backend_pid,)).fetchone():
            pass
        read.append(reader.execute("SELECT username FROM auth_user FOR UPDATE").fetchall())
        reader.execute("COMMIT")

    thread = threading.Thread(target=lock_what_the_flush_deleted)
    thread.start()
    try:
        flush_as_a_test_ends()
    finally:
        thread.join(timeout=30)
        reader.close()
    assert read == [[("left-over",)]]  # the flush was rolled back while the reader read
    assert not User.objects.exists() and not Session.objects.exists()
