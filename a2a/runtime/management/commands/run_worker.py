"""`manage.py run_worker`: django-tasks-db's `db_worker`, made to outlive database faults
and to say it is alive.

What it adds to `db_worker` (every option of which it takes):
- a beat row every BEAT_SECONDS (a2a.runtime.beats), so a killed worker's task is taken
  over within DEAD_SECONDS and the job row it left RUNNING is marked;
- the worker id is the runtime's (`host:pid`), the name its leases and beats carry, so
  the scheduler can tell which job rows belong to a dead worker;
- a database error in the polling loop (a restart, a failover, a terminated backend)
  no longer ends the process — `db_worker` re-raises it, and `manage.py serve` would
  then stop everything: the worker closes its connections, waits (0.5 s, doubling to
  5 s) and polls again;
- a doorbell (a2a.runtime.doorbell): between polls the worker waits on it instead of
  sleeping, so a new job starts at once and `--interval` is only the fallback poll (a
  lost ring costs that much, nothing more).

db_worker's Worker sleeps with `time.sleep(self.interval)` in its loop (django-tasks-db
0.13); the loop is not ours to copy, so for this process db_worker's module sees a `time`
whose `sleep` is the bell's wait. Should a release stop sleeping that way, the worker
only polls as db_worker does (tests/runtime/test_wakeups.py would notice, and
tests/test_upgrade_guards.py names the cause; docs/upgrading.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django_tasks_db.management.commands import db_worker
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from a2a import collector
from a2a.checks import PROCESS_CHECKS
from a2a.runtime import beats, doorbell
from a2a.runtime.faults import describe, discard_connections, is_infrastructure
from a2a.runtime.leases import WORKER_ID

log = logging.getLogger(__name__)


class Command(DbWorkerCommand):
    help = "Run agent jobs (db_worker with beats and database-fault tolerance)."
    requires_system_checks = PROCESS_CHECKS  # it serves no page (a2a/checks.py)

    def handle(self, *args: Any, **options: Any) -> None:
        # Everything loaded so far (Django, the apps, the agents) lives as long as the
        # process: frozen out of the collector's reach, as Daphne's is (a2a/collector.py),
        # so a full collection walks only what the jobs made since. Unfrozen, one took
        # 20-40 ms in a process like this one (bench/agui_fanout.py's writer), during
        # which its projector thread projected nothing.
        collector.settle()
        options["worker_id"] = WORKER_ID
        options["reload"] = False  # the reloader's child would beat under another pid
        bell = doorbell.Bell()
        bell.start()
        db_worker.time = _Clock(bell.wait)  # type: ignore[attr-defined]
        beats.start()
        wait = 0.5
        try:
            while True:
                try:
                    super().handle(*args, **options)
                    return  # a signal asked it to stop, or --batch / --max-tasks ended it
                except Exception as exc:
                    if not is_infrastructure(exc):
                        raise
                    discard_connections()
                    log.warning("worker: database unavailable (%s); again in %.1f s",
                                describe(exc), wait)  # fmt: skip
                    time.sleep(wait)
                    wait = min(wait * 2, 5.0)
        finally:
            beats.stop()


class _Clock:
    """The `time` module as db_worker's loop sees it in this process, with `sleep` (its
    wait between polls, and its start-up delay) ending early when the doorbell rings."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self.sleep = sleep

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)
