"""Django's SQLite backend, with write transactions queued by the kernel, across processes.

Why: SQLite hands its write lock to no one in particular. A connection that finds it taken
sleeps in SQLite's busy handler (1, 2, 5, 10 … up to 100 ms at a time) before it looks
again, so under load the lock sits free while every waiter sleeps, and an unlucky waiter
loses round after round. `make run` runs two web processes, two workers and a scheduler on
one file: its blocking sends kept only ~1.1 of 2 cores busy, with p99 above 2 s
(bench/load.py). Here each transaction first takes an exclusive flock(2) on a file beside
the database; the kernel queues the waiters and wakes the next one the moment a
transaction ends, in any process.

Every Taskdeck transaction on SQLite is IMMEDIATE already (one writer at a time,
settings.py), so the queue adds no ordering that was not there and no new deadlock: the
holder of the flock is the one that holds, or is about to take, SQLite's own lock. A
process that dies lets go of its flock with its file descriptors. Each connection opens
its own descriptor, so threads of one process queue too.

A write outside a transaction (autocommit: a worker's beat, a lease's heartbeat, a job
row's final status) queues too, for that one statement. Left to SQLite's busy handler it
starved: the queue hands the lock straight from one transaction to the next, so the
handler's sleeps almost never found it free. A worker's first beat waited longer than the
scheduler's DEAD_SECONDS under a busy run, and a worker killed then was never seen dead
(its run stayed held until its lease expired). In-memory databases are not queued.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable
from typing import Any

from django.db.backends.sqlite3 import base

# Statements that take SQLite's write lock (Django's ORM and a2a.prepared send no others
# outside a transaction; schema changes run in one).
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


class QueuedCursorWrapper(base.SQLiteCursorWrapper):
    """Django's cursor, whose writes outside a transaction wait their turn in the queue."""

    owner: DatabaseWrapper

    def execute(self, query: str, params: Any = None) -> Any:
        return self._in_turn(super().execute, query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        return self._in_turn(super().executemany, query, param_list)

    def _in_turn(self, run: Callable[[str, Any], Any], query: str, params: Any) -> Any:
        turn = self.owner.take_turn_for(query)
        try:
            return run(query, params)
        finally:
            if turn is not None:
                fcntl.flock(turn, fcntl.LOCK_UN)


class DatabaseWrapper(base.DatabaseWrapper):
    _queue_fd: int | None = None
    _queue_pid = 0
    _queued = False

    def _queue(self) -> int | None:
        if self._queue_fd is not None and self._queue_pid != os.getpid():
            # Inherited through fork(): the descriptor shares its lock with the parent's,
            # so this process would neither wait for the parent nor be waited for.
            os.close(self._queue_fd)
            self._queue_fd, self._queued = None, False
        if self._queue_fd is None and not self.is_in_memory_db():
            path = f"{self.settings_dict['NAME']}.writers"
            self._queue_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._queue_pid = os.getpid()
        return self._queue_fd

    def create_cursor(self, name: str | None = None) -> QueuedCursorWrapper:
        cursor = self.connection.cursor(factory=QueuedCursorWrapper)
        cursor.owner = self
        return cursor

    def take_turn_for(self, query: str) -> int | None:
        """Take the queue if `query` writes outside a transaction (inside one, the
        transaction holds it already): returns the descriptor to unlock after the
        statement, or None. Reads pay one regex match."""
        if self._queued or not _WRITE.match(query):
            return None
        fd = self._queue()
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def _start_transaction_under_autocommit(self) -> None:
        fd = self._queue()
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks with the GIL released
            self._queued = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._leave_queue()
            raise

    def _leave_queue(self) -> None:
        if self._queued:
            self._queued = False
            if self._queue_pid == os.getpid():  # never the lock a parent process holds
                fcntl.flock(self._queue_fd, fcntl.LOCK_UN)

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._leave_queue()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._leave_queue()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._leave_queue()
            if self._queue_fd is not None:
                os.close(self._queue_fd)  # a parent's lock is not released by a child's close
                self._queue_fd = None
