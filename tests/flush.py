"""How a transactional test empties the database after itself.

On PostgreSQL Django's flush is one TRUNCATE of every table, which costs ~250 ms (each
table and index gets new files, committed durably), and nearly half of the suite's tests
are transactional (live servers, workers): four of the PostgreSQL lane's nine minutes were
flushes. A DELETE of every table, constraints deferred, empties the same tables in under
a millisecond when they hold a test's few rows. It also takes only row locks, where the
TRUNCATE takes each table whole and can deadlock with a worker's or the scheduler's
query over two tables (CI, stop 24: the next test started on the last one's rows).

Content types and permissions are kept: the flush deletes them only for its post_migrate
signal to create them again, the same rows. Any flush PostgreSQL aborts as a deadlock's
victim changed nothing and is run again, as PostgreSQL's documentation advises.
On SQLite (whose flush is a DELETE per table already) keeping content types and
permissions makes it 0.4 ms instead of 20 ms."""

from __future__ import annotations

from django.db import connections, transaction
from django.test import TransactionTestCase

DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE for a deadlock it broke
KEPT = frozenset({"django_content_type", "auth_permission", "django_migrations"})
ATTEMPTS = 5


def emptied_tables(alias: str = "default") -> list[str]:
    """The tables the flush empties, in the order it empties them."""
    introspection = connections[alias].introspection
    names = introspection.django_table_names(only_existing=True, include_views=False)
    return sorted(set(names) - KEPT)


def delete_everything(alias: str) -> None:
    connection = connections[alias]
    quote = connection.ops.quote_name
    deletes = [f"DELETE FROM {quote(t)}" for t in emptied_tables(alias)]
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # one round trip
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            cursor.execute("; ".join(deletes))
        else:  # SQLite's foreign keys are deferred already; one statement per execute
            for delete in deletes:
                cursor.execute(delete)


def _deadlocked(exc: BaseException | None) -> bool:
    while exc is not None:
        if getattr(exc, "sqlstate", None) == DEADLOCK_DETECTED:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def install() -> None:
    """Make every TransactionTestCase (pytest-django's transactional_db) flush this way."""
    djangos_flush = TransactionTestCase._fixture_teardown

    def flush(case: TransactionTestCase) -> None:
        if case.available_apps is not None or case.serialized_rollback:
            return djangos_flush(case)
        for alias in case._databases_names(include_mirrors=False):
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    delete_everything(alias)
                    break
                except Exception as exc:
                    if attempt == ATTEMPTS or not _deadlocked(exc):
                        raise

    TransactionTestCase._fixture_teardown = flush
