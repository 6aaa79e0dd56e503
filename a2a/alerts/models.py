"""Alerts and their deliveries, recorded before anything is sent.

An alert is one condition that needs a person (an approval waiting too long, a failed
task, the live view lagging), recorded once: `key` is unique, so however many scheduler
ticks (or schedulers) see the same condition, there is one alert per task per reason. Each
configured channel gets a delivery row, and each try of it an attempt row, so an operator
sees on /alerts what was sent where, when, after how many tries, and why not.
"""

from __future__ import annotations

from django.db import models


class Alert(models.Model):
    class Reason(models.TextChoices):
        APPROVAL = "approval", "Approval waiting"
        FAILED = "failed", "Task failed"
        LAG = "lag", "Live view lagging"

    # one alert per condition: "approval:<task>:<question n>", "failed:<task>", "lag:<start>"
    key = models.CharField(max_length=200, unique=True)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    # Not a foreign key: the record outlives the task (retention may delete it).
    task_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    # When the condition began (the task's status time; the oldest unprojected event). The
    # newest `since` of a reason is where its next detection starts (an index reads it).
    since = models.DateTimeField()
    text = models.TextField()
    link = models.CharField(max_length=2048, blank=True, default="")
    created_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)  # a lag episode's end

    class Meta:
        indexes = [
            models.Index(fields=["reason", "since"], name="alert_reason_since"),
            models.Index(fields=["-created_at", "-id"], name="alert_created_id"),
        ]

    def __str__(self) -> str:
        return self.key


class AlertDelivery(models.Model):
    """One alert owed to one channel."""

    class Channel(models.TextChoices):
        EMAIL = "email", "Email"
        WEBHOOK = "webhook", "Webhook"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        ABANDONED = "abandoned", "Given up"
        REFUSED = "refused", "Refused"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    target = models.CharField(max_length=2048)  # the recipients, or the webhook without query
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # a job trying it holds it until then (a second job for the same row finds it taken)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "channel"], name="alertdelivery_one_per_channel"
            )
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="alertdelivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.alert_id} by {self.channel}: {self.status}"


class AlertAttempt(models.Model):
    """One try of one delivery: when, and what came of it."""

    delivery = models.ForeignKey(AlertDelivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField()
    ok = models.BooleanField()
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["delivery", "at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.at:%H:%M:%S}: {'ok' if self.ok else self.error}"
