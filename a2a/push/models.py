"""Push notification configs and their delivery log.

A config belongs to a task and is what the client asked for (where, with which token and
credentials, in which wire version). A delivery is one TaskEvent owed to one config: it is
recorded before anything is sent, so a restart loses nothing and an operator can see what
was sent, when, after how many attempts, and why not.
"""

from __future__ import annotations

from django.db import models

from a2a.models import Task, TaskEvent

from . import sealing


class PushConfig(models.Model):
    class Version(models.TextChoices):
        V03 = "0.3"
        V10 = "1.0"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="push_configs")
    config_id = models.CharField(max_length=128)
    url = models.CharField(max_length=2048)
    # The client's secrets for its own webhook: sealed at rest (a2a/push/sealing.py), sent
    # only to `url`, never logged, never shown — on the wire get/list answer them masked.
    token = models.TextField(blank=True, default="")
    auth_schemes = models.JSONField(default=list, blank=True)  # the first one is used
    auth_credentials = models.TextField(blank=True, default="")
    version = models.CharField(max_length=4, choices=Version.choices)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Delivery bookkeeping (see a2a.push.delivery). Events with an id above `start_after`
    # are owed to this config; the log has been scanned for them up to `scanned_through`.
    start_after = models.BigIntegerField(default=0)
    scanned_through = models.BigIntegerField(default=0)
    # A delivery job was queued and has not started yet (later events need not queue one).
    kicked_at = models.DateTimeField(null=True, blank=True)
    # The job delivering for this config now, until when (one at a time keeps the order).
    pump_owner = models.CharField(max_length=100, blank=True, default="")
    pump_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "config_id"], name="push_config_task_id"),
        ]

    def __str__(self) -> str:
        return f"{self.config_id} for task {self.task_id}"

    @property
    def plain_token(self) -> str:
        return sealing.unseal(self.token)

    @property
    def plain_credentials(self) -> str:
        return sealing.unseal(self.auth_credentials)

    @property
    def auth_scheme(self) -> str:
        return self.auth_schemes[0] if self.auth_schemes else ""


class PushDelivery(models.Model):
    """One event owed to one webhook, and what happened to it."""

    class Status(models.TextChoices):
        PENDING = "pending"  # not sent yet, or waiting for its next attempt
        DELIVERED = "delivered"  # the webhook answered 2xx
        ABANDONED = "abandoned"  # every attempt failed
        REFUSED = "refused"  # the webhook resolved to an address that is not allowed
        SKIPPED = "skipped"  # the event renders no notification (nothing to send)

    config = models.ForeignKey(PushConfig, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(TaskEvent, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True, default="")
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["config", "event"]
        constraints = [
            models.UniqueConstraint(fields=["config", "event"], name="push_delivery_config_event"),
        ]
        indexes = [
            models.Index(fields=["config", "status", "event"], name="push_delivery_queue"),
            models.Index(fields=["status", "next_attempt_at"], name="push_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"event {self.event_id} → {self.config_id} ({self.status})"
