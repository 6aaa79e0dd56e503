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
