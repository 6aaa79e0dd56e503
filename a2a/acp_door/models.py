"""An ACP session as Taskdeck keeps it: which context it is, which skill its next task
runs (the session's mode), and which task its prompts go to now.

Only the ACP door writes these rows (they are the door's own bookkeeping, not task state);
tasks themselves change only through `a2a.services`.
"""

from __future__ import annotations

import uuid

from django.db import models


def new_session_id() -> str:
    return f"sess-{uuid.uuid4()}"


class AcpSession(models.Model):
    session_id = models.CharField(
        primary_key=True, max_length=64, default=new_session_id, editable=False
    )
    context_id = models.CharField(max_length=128, unique=True)
    skill = models.CharField(max_length=64)  # the session's mode: the skill of its next task
    cwd = models.CharField(max_length=1024)
    title = models.CharField(max_length=200, blank=True, default="")
    # The task prompts go to: the latest task the session started (null before the first).
    task = models.ForeignKey(
        "a2a.Task", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.CharField(max_length=150)
    # the tenant of the key that opened it: only that tenant's keys (and operator keys)
    # list, load, resume or prompt it (a2a/access.py)
    owner = models.CharField(max_length=160, blank=True, default="", db_index=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "session_id"]
        verbose_name = "ACP session"

    def __str__(self) -> str:
        return self.title or self.session_id
