"""The SQLite backend queues write transactions on a flock beside the database
(dashboard/sqlite_backend/base.py): held from BEGIN to COMMIT, ROLLBACK or close, so the
next transaction — in this process or another — goes on when one ends, and none is lost."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest
from django.db import connection, transaction

from a2a.models import Task
from tests.runtime.conftest import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite backend's own queue"),
]


def _queue_is_free() -> bool:
    """Whether another process could enter the queue now (its own descriptor)."""
    fd = os.open(f"{connection.settings_dict['NAME']}.writers", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def test_a_transaction_holds_the_queue_until_it_commits(make_task):
    task = make_task("working")
    with transaction.atomic():
        Task.objects.filter(pk=task.id).update(origin_title="inside")
        assert not _queue_is_free()
    assert _queue_is_free()


def test_a_second_thread_waits_for_the_first_and_goes_on_when_it_ends(make_task):
    task = make_task("working")
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with transaction.atomic():
            Task.objects.filter(pk=task.id).update(origin_title="first")
            entered.set()
            release.wait(10)
            order.append("first commits")

    def second() -> None:
        entered.wait(10)
        with transaction.atomic():
            order.append("second starts")
            Task.objects.filter(pk=task.id).update(origin_title="second")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    entered.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["first commits", "second starts"]
    assert Task.objects.get(pk=task.id).origin_title == "second"
    assert _queue_is_free()


def test_a_rolled_back_transaction_or_a_closed_connection_lets_the_next_one_in(make_task):
    task = make_task("working")
    with pytest.raises(RuntimeError), transaction.atomic():
        Task.objects.filter(pk=task.id).update(origin_title="never")
        raise RuntimeError("boom")
    assert _queue_is_free()
    with transaction.atomic():
        Task.objects.filter(pk=task.id).update(origin_title="kept")
        connection.close()  # as a fault handler may: the queue is left with it
        assert _queue_is_free()
    assert Task.objects.get(pk=task.id).origin_title != "kept"  # never committed


def test_a_forked_child_queues_on_a_descriptor_of_its_own(make_task):
    """A connection inherited through fork() shares its flock with the parent's: the child
    must open its own, or it would walk past a parent's transaction."""
    task = make_task("working")
    with transaction.atomic():
        Task.objects.filter(pk=task.id).update(origin_title="parent")
        pid = os.fork()
        if pid == 0:  # the child: its first transaction must wait for the parent's
            code = 1
            try:
                connection._queue()
                code = 0 if connection._queue_fd is not None and not connection._queued else 2
                got = fcntl.flock(connection._queue_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                code = 3 if got is None else code  # took the parent's lock: wrong
            except BlockingIOError:
                pass  # waits for the parent, as it must
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _queue_is_free()


def _a_writer_waits_on_the_queue() -> bool:
    """Whether a thread of this process sleeps in flock(2) on the queue file: the kernel
    lists it in /proc/locks as a blocked request ("->", with the process's id)."""
    inode = os.stat(f"{connection.settings_dict['NAME']}.writers").st_ino
    with open("/proc/locks") as locks:
        return any(
            "->" in line and f" {os.getpid()} " in line and f":{inode} " in line for line in locks
        )


def test_a_write_outside_a_transaction_waits_its_turn_instead_of_failing(make_task):
    """A lone UPDATE in autocommit (a worker's beat, a lease's heartbeat) queues behind
    the transaction that holds the queue. Left to SQLite's busy handler it starved under
    a busy run; here the handler gets no time at all (busy_timeout 0), so an UPDATE that
    did not queue would fail at once with "database is locked"."""
    task = make_task("working")
    outcome: dict[str, object] = {}

    def lone_write() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA busy_timeout = 0")
            Task.objects.filter(pk=task.id).update(origin_title="beat")
            outcome["done"] = True
        except Exception as exc:
            outcome["error"] = exc
        finally:
            connection.close()

    writer = threading.Thread(target=lone_write)
    with transaction.atomic():
        Task.objects.filter(pk=task.id).update(origin_title="transaction")
        writer.start()
        wait_for(lambda: "error" in outcome or _a_writer_waits_on_the_queue(), 10)
        assert "error" not in outcome, outcome
        assert "done" not in outcome  # it waits for this transaction to end
    writer.join(10)
    assert outcome.get("done") and "error" not in outcome, outcome
    assert Task.objects.get(pk=task.id).origin_title == "beat"
    assert _queue_is_free()


def test_the_database_is_read_through_a_memory_map():
    """Reads of pages past SQLite's own small cache come from the mapped file, not a read()
    each: without it a call's cost grew with the database (dashboard/settings.py)."""
    from dashboard.settings import SQLITE_MMAP_BYTES

    with connection.cursor() as cursor:
        cursor.execute("PRAGMA mmap_size")
        (mapped,) = cursor.fetchone()
    assert 0 < mapped <= SQLITE_MMAP_BYTES
