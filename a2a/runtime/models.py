"""What the runtime remembers between slices of a run: completed steps and who runs what."""

from __future__ import annotations

from django.db import models

from a2a.models import Task


class StepRecord(models.Model):
    """A completed step of an agent run. Replays return `result` instead of running the
    step again; `seq` is the step's position in the run, `name` guards against an agent
    whose code changed under a paused run (a mismatch fails the task rather than replaying
    the wrong result)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="steps")
    seq = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    result = models.JSONField(null=True)
    completed_at = models.DateTimeField()
    worker = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["task", "seq"]
        constraints = [models.UniqueConstraint(fields=["task", "seq"], name="step_task_seq")]

    def __str__(self) -> str:
        return f"{self.task_id}#{self.seq} {self.name}"


class RunLease(models.Model):
    """Who is running a task now, until when, and whether it wants to run.

    `wakeups` grows each time something makes the task runnable (created, answered,
    resumed); a slice remembers the value it started with, so a wakeup that lands while
    it finishes is not lost. A lease whose `expires_at` has passed belonged to a worker that
    died: the scheduler hands the task to another.
    """

    task = models.OneToOneField(Task, on_delete=models.CASCADE, primary_key=True)
    owner = models.CharField(max_length=64, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    wakeups = models.PositiveIntegerField(default=0)
    served = models.PositiveIntegerField(default=0)  # the wakeups value last run to a stop
    enqueued_at = models.DateTimeField(null=True, blank=True)
    slices = models.PositiveIntegerField(default=0)
    # The job last queued for this task: while it waits (READY) no other is queued, so a
    # task has at most one pending run whatever wakes it or how often the scheduler looks.
    job_id = models.UUIDField(null=True, blank=True)
    # Infrastructure faults in a row (database, channel layer): the next retry waits
    # 2**faults times the base delay. A slice that reaches a stop resets it.
    faults = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"lease {self.task_id} ({self.owner or 'free'})"


class WorkerBeat(models.Model):
    """A worker process says it is alive, and which job it runs, every BEAT_SECONDS.

    The scheduler reads these to take a dead worker's task over within seconds instead of
    waiting for its lease to expire, and to mark the job row a SIGKILLed worker left
    RUNNING (django-tasks-db has no reclaim of its own). A worker that stops cleanly
    deletes its row; a killed one leaves a row that stops moving.
    """

    worker = models.CharField(max_length=64, primary_key=True)  # leases.WORKER_ID
    beat_at = models.DateTimeField(db_index=True)
    started_at = models.DateTimeField()
    job_id = models.UUIDField(null=True, blank=True)  # the job it runs now, if any

    def __str__(self) -> str:
        return f"{self.worker} at {self.beat_at:%H:%M:%S}"
