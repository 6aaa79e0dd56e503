"""Tells idle workers that a job is ready, so they start it at once instead of at their
next poll of the job table.

Ring (whoever writes a job row: a request, the scheduler, a worker's retry, push
delivery): django-tasks' `task_enqueued` signal, and `wakeups.enqueue` when it brings a
waiting job forward, ring on commit of the writer's transaction — a rolled-back job rings
nobody. On PostgreSQL the bell is NOTIFY on channel `taskdeck_jobs`, heard by workers on
any machine; elsewhere (SQLite: one machine by nature) a datagram to every worker's
socket (a2a.localwake). The payload names when a deferred job becomes due, so a worker
also wakes on time for retries and push back-offs without polling fast.

Wait (the worker, `manage.py run_worker`): db_worker sleeps `--interval` seconds between
polls; run_worker has it wait on a `Bell` instead, which ends the wait when a job is rung
or due. A thread per worker hears the bell (LISTEN on its own connection, or the local
socket) all the time, also while a job runs, so nothing piles up unread.

The job table stays the truth. A lost ring (a worker that was reconnecting, a full inbox,
PostgreSQL behind a transaction-mode pooler that drops LISTEN) costs at most the poll
interval; a spurious one costs one poll.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from datetime import datetime
from typing import Any

from django.db import connections, router, transaction
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult, get_date_max

from a2a import localwake

log = logging.getLogger(__name__)

CHANNEL = "taskdeck_jobs"
MAX_DUE = 1024  # deferred jobs a worker remembers; beyond, the poll finds them
DUE_SLACK = 0.005  # wake this much after a due time: the job's run_after has passed then
RECONNECT_SECONDS = (0.5, 5.0)  # a lost LISTEN connection is retried after 0.5 s, up to 5 s


def jobs_database() -> str:
    """The alias the job rows live on (django-tasks-db's DBTaskResult)."""
    return router.db_for_write(DBTaskResult)


def on_job_enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
    """django-tasks' task_enqueued signal: a job row was just written (in the writer's
    transaction when there is one)."""
    if isinstance(sender, type) and issubclass(sender, DatabaseBackend):
        ring(at=getattr(getattr(task_result, "task", None), "run_after", None))


def ring(*, at: datetime | None = None, using: str | None = None) -> None:
    """Wake idle workers when the current transaction commits (at once outside one): a
    job is ready, or becomes due `at`. Never raises into the writer."""
    using = using or jobs_database()
    if at is not None and at == get_date_max():
        at = None  # django-tasks-db's "as soon as possible"
    payload = "" if at is None else f"{at.timestamp():.3f}"
    ring_on_commit(CHANNEL, "jobs", payload, using=using)


def ring_on_commit(channel: str, inbox: str, payload: str, *, using: str | None = None) -> None:
    """Ring bell `channel` (PostgreSQL NOTIFY) / local inbox kind `inbox` (SQLite) with
    `payload` when the current transaction commits (at once outside one)."""
    using = using or jobs_database()
    transaction.on_commit(lambda: _ring_now(using, payload, channel, inbox), using=using)


def _ring_now(using: str, payload: str, channel: str = CHANNEL, inbox: str = "jobs") -> None:
    try:
        conn = connections[using]
        if conn.vendor == "postgresql":
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])
        else:
            # to itself too: a worker that defers its own retry wakes for it when due
            localwake.broadcast(inbox, payload.encode(), to_self=True)
    except Exception as exc:  # the change is committed; the listeners find it by polling
        log.warning("could not ring %s (%s); its listeners find the change by polling",
                    channel, exc)  # fmt: skip


class Bell:
    """What a worker waits on between polls: `wait(seconds)` returns when a job was rung,
    when a deferred job it heard of is due, or after `seconds` (the poll, as before)."""

    def __init__(
        self, using: str | None = None, *, channel: str = CHANNEL, inbox: str = "jobs"
    ) -> None:
        self.using = using or jobs_database()
        self.channel, self.inbox = channel, inbox
        self.cond = threading.Condition()
        self.ready = False  # a job may be waiting now: poll
        self.due: list[float] = []  # heap of wall-clock times deferred jobs become due
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start hearing the bell (idempotent). The local inbox is bound here, before the
        worker's first poll, so no ring falls between the two; a LISTEN connection rings
        once when it is (re)established, for what was sent before."""
        if self.thread is not None:
            return
        if connections[self.using].vendor == "postgresql":
            target: Any = self._listen
        else:
            try:
                inbox = localwake.Inbox(self.inbox)
            except localwake.Unavailable as why:
                log.info("worker: no local wake-ups (%s); polling only", why)
                return

            def target() -> None:
                self._read(inbox)

        self.thread = threading.Thread(target=target, name="taskdeck-doorbell", daemon=True)
        self.thread.start()

    def heard(self, payload: str) -> None:
        """A ring: a job is ready now (empty payload, or a due time that has passed), or a
        deferred one becomes due at the time the payload names."""
        try:
            due = float(payload) if payload else None
        except ValueError:
            due = None
        with self.cond:
            if due is None or due <= time.time():
                self.ready = True
            elif len(self.due) < MAX_DUE:
                heapq.heappush(self.due, due)
            self.cond.notify_all()

    def wait(self, seconds: float) -> bool:
        """db_worker's sleep between polls. A signal (a worker told to stop) interrupts it
        like the sleep it replaces. True when it ended by a ring (or a due job), False
        after `seconds` (the ACP host's supervisor tells its sessions only of rings)."""
        deadline = time.monotonic() + seconds
        with self.cond:
            while not self.ready:
                now = time.time()
                while self.due and self.due[0] <= now:
                    heapq.heappop(self.due)
                    self.ready = True
                left = deadline - time.monotonic()
                if self.ready or left <= 0:
                    break
                if self.due:
                    left = min(left, self.due[0] - now + DUE_SLACK)
                self.cond.wait(left)
            rung, self.ready = self.ready, False
            return rung

    def _read(self, inbox: localwake.Inbox) -> None:
        while True:
            try:
                payloads = inbox.wait(None)
            except (OSError, ValueError):  # closed: the process is exiting
                return
            for payload in payloads:
                self.heard(payload.decode("ascii", "replace"))

    def _listen(self) -> None:
        """LISTEN on a connection of its own, for the life of the process: a database
        restart or a terminated backend ends one connection, and the next is opened after
        a back-off (the worker polls meanwhile)."""
        delay = RECONNECT_SECONDS[0]
        while True:
            try:
                conn = self._connect()
            except Exception as exc:
                log.warning("worker: cannot LISTEN for jobs (%s); polling, again in %.1f s",
                            exc, delay)  # fmt: skip
                time.sleep(delay)
                delay = min(delay * 2, RECONNECT_SECONDS[1])
                continue
            delay = RECONNECT_SECONDS[0]
            self.heard("")  # rings sent while not listening are lost: poll once now
            try:
                for note in conn.notifies():
                    self.heard(note.payload)
            except Exception as exc:
                log.info("worker: LISTEN connection lost (%s); reconnecting", exc)
            finally:
                try:
                    conn.close()
                except Exception:  # already broken
                    log.debug("closing the LISTEN connection failed", exc_info=True)
            time.sleep(delay)

    def _connect(self) -> Any:
        """A psycopg connection with Django's parameters for the jobs database (not one of
        Django's: it lives in this thread and outside transactions), listening."""
        import psycopg

        params = connections[self.using].get_connection_params()
        params.setdefault("connect_timeout", 5)
        # a silently dropped connection (no RST) is noticed within about a minute
        for key, value in (("keepalives", 1), ("keepalives_idle", 30),
                           ("keepalives_interval", 10), ("keepalives_count", 3)):  # fmt: skip
            params.setdefault(key, value)
        conn = psycopg.connect(autocommit=True, **params)
        conn.execute(f"LISTEN {self.channel}")
        return conn
