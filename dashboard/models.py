"""The dashboard's own record: who did what to which task, and how it went.

Task history (TaskEvent) records changes that happened; the audit log records what operators
*asked for*, including what was refused (a viewer's forged POST, a pause without a reason, a
resume of a task that had already finished), so "who decided what" has an honest answer.
"""

from __future__ import annotations

from django.db import models


class AuditEntry(models.Model):
    class Outcome(models.TextChoices):
        OK = "ok"
        REFUSED = "refused"

    BULK = "bulk"  # task_id of a bulk action (its detail names the tasks)

    who = models.CharField(max_length=150, db_index=True)  # "operator:<username>"
    action = models.CharField(max_length=32, db_index=True)
    task_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    reason = models.TextField(blank=True, default="")
    outcome = models.CharField(max_length=8, choices=Outcome.choices, db_index=True)
    detail = models.TextField(blank=True, default="")
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.who} {self.action} {self.task_id or '-'} ({self.outcome})"


class BulkOperation(models.Model):
    """One confirmed bulk action (dashboard/bulkops.py): what was asked, of which tasks
    (its `items`, fixed when it was confirmed: the preview's count is what it acts on),
    and how far it got. Progress commits with each batch of tasks it changed, so the page
    that polls it and a runner that resumes it after a crash read the same truth."""

    class Status(models.TextChoices):
        RUNNING = "running"
        FINISHED = "finished"

    action = models.CharField(max_length=16)
    reason = models.TextField()
    mode = models.CharField(max_length=24, blank=True, default="")
    who = models.CharField(max_length=150)
    selection = models.TextField(blank=True, default="")  # "all tasks matching state=…"
    total = models.PositiveIntegerField()
    done = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    created_at = models.DateTimeField()
    beat_at = models.DateTimeField()  # a runner's last batch; a stale one is resumed
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "beat_at"], name="bulkop_running")]

    def __str__(self) -> str:
        return f"bulk #{self.pk} {self.action} ({self.done + self.refused}/{self.total})"


class BulkItem(models.Model):
    """One task of a bulk action, and what became of it: blank `outcome` until its batch
    ran, then "done" or "refused" with why (a task that ended meanwhile, say)."""

    class Outcome(models.TextChoices):
        WAITING = ""
        DONE = "done"
        REFUSED = "refused"

    operation = models.ForeignKey(BulkOperation, on_delete=models.CASCADE, related_name="items")
    task_id = models.CharField(max_length=64)
    outcome = models.CharField(max_length=8, blank=True, default="", choices=Outcome.choices)
    why = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            # the next batch: an operation's waiting items in order; and its outcomes
            models.Index(fields=["operation", "outcome", "id"], name="bulkitem_next"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.outcome or 'waiting'}"
