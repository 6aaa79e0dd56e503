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
  5 s) and polls again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from a2a.runtime import beats
from a2a.runtime.faults import describe, discard_connections, is_infrastructure
from a2a.runtime.leases import WORKER_ID

log = logging.getLogger(__name__)


class Command(DbWorkerCommand):
    help = "Run agent jobs (db_worker with beats and database-fault tolerance)."

    def handle(self, *args: Any, **options: Any) -> None:
        options["worker_id"] = WORKER_ID
        options["reload"] = False  # the reloader's child would beat under another pid
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
