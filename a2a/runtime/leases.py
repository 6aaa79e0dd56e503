"""Run leases: one worker runs a task at a time, a dead worker's task is taken over, and
a wakeup that lands while a slice finishes is not lost (see RunLease).

The only code that writes RunLease rows is the runtime's. The ACP host's supervisors run
hosted agents' turns under the same leases (so a blocking send waits for a hosted agent's
turn as for a worker's slice, a2a.runtime.settle): they claim and release them with
`claim` and `release`, and count wakeups, renew and let go with the functions at the end
of this module (no job is queued for those tasks).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from a2a import conf
from a2a.lifecycle import State
from a2a.models import Task
from a2a.prepared import Prepared, PreparedInsert, PreparedUpdate
from a2a.runtime.models import RunLease

RUNNABLE = (State.SUBMITTED, State.WORKING)
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"


def lease_seconds() -> float:
    return conf.RUNTIME.lease_seconds


def claim(task_id: str, worker: str = WORKER_ID) -> int | None:
    """Take the lease if nobody holds a live one and the task is runnable; returns the
    wakeup count the slice serves, or None."""
    now = timezone.now()
    with transaction.atomic():
        lease, _ = RunLease.objects.select_for_update().get_or_create(task_id=task_id)
        if lease.owner and lease.expires_at and lease.expires_at > now:
            return None
        state = Task.objects.filter(pk=task_id).values_list("state", flat=True).first()
        if state not in RUNNABLE:
            lease.owner, lease.expires_at, lease.served = "", None, lease.wakeups
            SAVE.save(lease, ("owner", "expires_at", "served"))
            return None
        lease.owner = worker
        lease.expires_at = now + timedelta(seconds=lease_seconds())
        lease.slices += 1
        SAVE.save(lease, ("owner", "expires_at", "slices"))
        return lease.wakeups


def heartbeat(task_id: str, worker: str = WORKER_ID) -> bool:
    """Extend our lease; False if it is no longer ours (it expired and was taken)."""
    expires = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(RunLease.objects.filter(task_id=task_id, owner=worker).update(expires_at=expires))


# A run's lease, row-locked, and its task's state: read by every slice and every wakeup,
# compiled once (a2a/prepared.py says why).
LOCK = Prepared(lambda task: RunLease.objects.select_for_update().filter(task_id=task), "task")
STATE = Prepared(lambda task: Task.objects.filter(pk=task).values_list("state"), "task")
# and its writes: a new task's lease, a lease's new holder or counts
NEW = PreparedInsert(RunLease)
SAVE = PreparedUpdate(RunLease)


def release(task_id: str, served: int | None, worker: str = WORKER_ID) -> bool:
    """Give the lease back. `served` is the wakeup count the slice ran for (None after an
    infrastructure failure, so the scheduler retries). Returns True when the task woke up
    again meanwhile and is runnable: the caller should run another slice."""
    with transaction.atomic():
        return release_here(task_id, served, worker)


def release_here(task_id: str, served: int | None, worker: str = WORKER_ID) -> bool:
    """`release` in the caller's transaction: a slice gives its lease back with the write
    that ends it (a2a.runtime.executor, `GiveBack`)."""
    lease = LOCK.first(task=task_id)
    if lease is None or lease.owner != worker:
        return False
    lease.owner, lease.expires_at = "", None
    fields: tuple[str, ...] = ("owner", "expires_at")
    if served is not None:  # the slice reached a stop: its faults are behind it
        lease.served, lease.faults = served, 0
        fields += ("served", "faults")
    SAVE.save(lease, fields)
    if served is None or lease.wakeups == served:
        return False  # nothing woke it meanwhile: no need to read its state
    row = STATE.first(task=task_id)
    return bool(row) and row[0] in RUNNABLE


# -- runs that take no job (a hosted ACP agent's turns, a2a.acp_host) -------------------


def open_without_job(task_id: str) -> None:
    """A new task whose runs are not queued as jobs: its lease, one wakeup to serve,
    nobody holding it. In the creating transaction."""
    NEW.insert(task_id=task_id, wakeups=1, enqueued_at=timezone.now())


def count_wakeup(task_id: str) -> None:
    """The task woke up again (a message, a resume): one more wakeup to serve, counted in
    the waking transaction. No job is queued: the task's runner looks for itself."""
    RunLease.objects.filter(task_id=task_id).update(
        wakeups=F("wakeups") + 1, enqueued_at=timezone.now()
    )


def extend(task_ids: list[str], until: datetime, worker: str = WORKER_ID) -> None:
    """Extend the leases `worker` holds among `task_ids` until `until` (the host renews
    its sessions' holds and its turns' leases with one time)."""
    RunLease.objects.filter(task_id__in=task_ids, owner=worker).update(expires_at=until)


def let_go(task_id: str, worker: str = WORKER_ID) -> None:
    """`worker` stops holding the task's lease, if it does, whatever its wakeups: the run
    is free for another (a hosted session handed back or its task ended)."""
    RunLease.objects.filter(task_id=task_id, owner=worker).update(owner="", expires_at=None)


def counts(task_id: str) -> dict[str, Any] | None:
    """The lease's `wakeups`, `served` and `owner`, or None when the task has none."""
    return RunLease.objects.filter(task_id=task_id).values("wakeups", "served", "owner").first()
