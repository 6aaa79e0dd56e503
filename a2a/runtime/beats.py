"""Worker liveness: a beat row per worker process, written by a thread every BEAT_SECONDS.

A lease (15 s) is the backstop that needs nothing but the database; beats are what makes
takeover fast. The scheduler treats a worker whose beat is older than DEAD_SECONDS as
dead: it frees that worker's leases and queues their runs for the workers still alive,
and marks the job rows the dead worker left RUNNING (see scheduler.reclaim_jobs).

The beat also says which job the worker runs now (set from django-tasks' task_started /
task_finished signals), so a RUNNING row its living worker has moved on from — a job
whose final status could not be written while the database was away — is found too.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from a2a import conf
from a2a.runtime.leases import WORKER_ID
from a2a.runtime.models import WorkerBeat

log = logging.getLogger(__name__)

_state: dict[str, object] = {"job": None, "thread": None, "pid": None}
_stop = threading.Event()


def beat_seconds() -> float:
    return conf.RUNTIME.beat_seconds


def dead_seconds() -> float:
    return conf.RUNTIME.dead_seconds


def on_job_started(sender: object, task_result: object, **kwargs: object) -> None:
    """django-tasks' task_started signal: remember the job this process runs now."""
    _state["job"] = str(getattr(task_result, "id", "") or "") or None


def on_job_finished(sender: object, task_result: object, **kwargs: object) -> None:
    _state["job"] = None


def beat(worker: str = WORKER_ID) -> None:
    now = timezone.now()
    updated = WorkerBeat.objects.filter(worker=worker).update(beat_at=now, job_id=_state["job"])
    if not updated:
        WorkerBeat.objects.update_or_create(
            worker=worker, defaults={"beat_at": now, "started_at": now, "job_id": _state["job"]}
        )


def _loop() -> None:
    while not _stop.is_set():
        try:
            beat()
        except Exception as exc:  # the database is away: beat again when it is back
            log.warning("worker beat failed: %s", exc)
            connection.close()
        _stop.wait(beat_seconds())
    connection.close()


def start() -> None:
    """Beat now, then from a daemon thread of this process (idempotent; a forked child
    starts its own). `manage.py run_worker` starts it before it takes a job; a plain
    `db_worker` does not beat, and its runs are taken over when their lease expires."""
    thread = _state["thread"]
    if _state["pid"] == os.getpid() and isinstance(thread, threading.Thread) and thread.is_alive():
        return
    # The first beat is written before the worker takes a job: a worker killed holding a
    # run must have a beat to be seen dead by, or its run waits for the lease to expire.
    try:
        beat()
    except Exception as exc:  # the database is away: the thread beats when it is back
        log.warning("worker beat failed: %s", exc)
        connection.close()
    _stop.clear()
    thread = threading.Thread(target=_loop, name="taskdeck-beat", daemon=True)
    _state.update(thread=thread, pid=os.getpid())
    thread.start()


def stop(worker: str = WORKER_ID) -> None:
    """A clean stop: no more beats, and the row goes, so nobody waits for it to age."""
    _stop.set()
    thread = _state["thread"]
    if isinstance(thread, threading.Thread):
        thread.join(timeout=beat_seconds() + 1)
    try:
        WorkerBeat.objects.filter(worker=worker).delete()
    except Exception:  # the database is away: the row ages and is read as a dead worker
        log.warning("could not remove the beat of %s", worker)


def dead_workers(now: datetime) -> set[str]:
    """Workers whose beat stopped: killed, frozen, or cut off from the database."""
    cutoff = now - timedelta(seconds=dead_seconds())
    return set(WorkerBeat.objects.filter(beat_at__lt=cutoff).values_list("worker", flat=True))
