"""The transactional tests' flush survives a deadlock with a background process.

Workers and the scheduler query the test database while tests flush it; on PostgreSQL a
TRUNCATE of every table can deadlock with a query over two tables, and a flush that lost
left the next test on the last one's rows (CI, stop 24). tests/conftest.py runs an
aborted flush again; this test makes the deadlock happen on purpose."""

from __future__ import annotations

import re
import threading

import psycopg
import pytest
from django.contrib.auth.models import User
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection
from django.test import TransactionTestCase

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_flush_that_deadlocks_with_a_reader_is_run_again():
    User.objects.create(username="left-over")
    flusher = connection.cursor().connection
    # the flush detects the deadlock (it is the one PostgreSQL aborts), the reader waits
    flusher.execute("SET deadlock_timeout = '50ms'")
    params = connection.get_connection_params()
    reader = psycopg.connect(
        host=params["host"], port=params.get("port") or 5432, user=params["user"],
        dbname=connection.settings_dict["NAME"], autocommit=True,
    )  # fmt: skip
    reader.execute("SET deadlock_timeout = '10s'")
    # the flush locks its tables in the order of its TRUNCATE (this process's, as the
    # order comes from a set): the reader holds the last one, the flush takes the first
    # and waits for the last, then the reader asks for the first
    truncate = sql_flush(no_style(), connection, reset_sequences=False)[0]
    tables = re.findall(r'"(\w+)"', truncate.split(";")[0])
    first, last = tables[0], tables[-1]
    reader.execute("BEGIN")
    reader.execute(f'SELECT 1 FROM "{last}" LIMIT 1')
    waiting = "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted"

    def read_what_the_flush_holds() -> None:
        while not reader.execute(waiting, (flusher.info.backend_pid,)).fetchone():
            pass
        reader.execute(f'SELECT 1 FROM "{first}" LIMIT 1')
        reader.execute("COMMIT")

    thread = threading.Thread(target=read_what_the_flush_holds)
    thread.start()
    try:
        case = TransactionTestCase()
        case.databases = {"default"}
        case._fixture_teardown()
    finally:
        thread.join(timeout=30)
        reader.close()
    assert not User.objects.filter(username="left-over").exists()
