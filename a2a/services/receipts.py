"""Idempotent sends: the receipts that let a repeated message return the first result.

A client that lost the answer to a send (a timeout, a dropped connection) cannot tell
whether the message arrived; it sends it again with the same `messageId`. The key is the
caller's tenant (`Actor.tenant`: every key of one client shares it) and the messageId; the
receipt remembers the task the message went to, so the repeat gets that task and nothing
is written again. Different tenants use the same messageId independently.

- The same key with different parts is a client error (a messageId reused for another
  message), refused with ValidationFailed on `message.messageId`; nothing is written.
- The window is TASKDECK IDEMPOTENCY_HOURS (24; 0: off), and it is the receipts'
  retention too: an expired receipt never blocks a send (the send deletes it and starts
  afresh), so nothing reads it again. The scheduler deletes expired receipts
  (`prune_now_and_then`, registered with a2a.periodic by A2AConfig.ready()), PRUNE_BATCH
  at a time, oldest first by the indexed created_at: once a minute, and every tick while
  a backlog remains, so the table holds about a window's worth of sends whatever the
  send rate (docs/production.md, "Retention").
- Two concurrent sends of one message: the receipt is inserted in the delivery's
  transaction and (tenant, message_id) is unique, so on PostgreSQL the second insert waits
  for the first transaction, then fails; the loser rolls its whole delivery back and reads
  the winner's receipt. On SQLite the IMMEDIATE transaction already serialises senders.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.utils import timezone

from a2a import access, conf, periodic
from a2a.errors import TaskNotFound, ValidationFailed
from a2a.models import MessageReceipt, Task
from a2a.prepared import Prepared, PreparedInsert
from a2a.services._core import Actor

PRUNE_EVERY_SECONDS = 60.0
PRUNE_BATCH = 5000  # receipts per statement: a backlog drains in steps, no long lock
PACE = periodic.Paced(PRUNE_EVERY_SECONDS)


def window() -> timedelta | None:
    """How long a receipt counts; None when idempotent sends are off."""
    hours = conf.TASKDECK.idempotency_hours
    return timedelta(hours=hours) if hours > 0 else None


def digest(parts: list[dict[str, Any]]) -> str:
    """A fingerprint of the message's content: key order and spacing do not matter."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


# Every send looks for its receipt: compiled once (a2a/prepared.py says why).
_RECEIPT = Prepared(
    lambda tenant, message: MessageReceipt.objects.filter(
        tenant=tenant, message_id=message
    ).order_by("pk")[:1],
    "tenant",
    "message",
)


def find(tenant: str, message_id: str, within: timedelta) -> MessageReceipt | None:
    """The receipt of this message, if one counts. An expired one is deleted here, in the
    caller's transaction, so the new send's receipt can take its place."""
    found = _RECEIPT.first(tenant=tenant, message=message_id)
    if found is None:
        return None
    if found.created_at <= timezone.now() - within:
        found.delete()
        return None
    return found


_NEW = PreparedInsert(MessageReceipt)  # one per send, compiled once (a2a/prepared.py)


def keep(
    tenant: str, message_id: str, content: str, task_id: str, *, created: bool, answered: bool
) -> None:
    """Write the receipt; IntegrityError when a concurrent send of it committed first."""
    _NEW.insert(
        tenant=tenant,
        message_id=message_id,
        task_id=task_id,
        digest=content,
        created=created,
        answered=answered,
        created_at=timezone.now(),
    )


def first_task(receipt: MessageReceipt, content: str, actor: Actor) -> Task:
    """The task the first send went to, as it is now; refuses a different message under a
    used messageId (the client reused an id: doing nothing would lose its message)."""
    if receipt.digest != content:
        hours = conf.TASKDECK.idempotency_hours
        raise ValidationFailed(
            {
                "message.messageId": [
                    f"was already used for a different message in the last {hours:g} hours; "
                    "send a new message with a new messageId"
                ]
            }
        )
    task = Task.objects.filter(pk=receipt.task_id).first()
    if task is None or not access.may_act(actor, task.owner):
        raise TaskNotFound(receipt.task_id)
    return task


def prune(limit: int | None = None) -> int:
    """Delete up to `limit` receipts older than the window (all of them when it is off),
    oldest first: one statement, walking the index on created_at."""
    within = window()
    stale = MessageReceipt.objects.all()
    if within is not None:
        stale = stale.filter(created_at__lte=timezone.now() - within)
    oldest = stale.order_by("created_at").values("pk")[: limit or PRUNE_BATCH]
    deleted, _ = MessageReceipt.objects.filter(pk__in=oldest).delete()
    return deleted


def prune_now_and_then() -> int:
    """`prune`, the scheduler's periodic job: at most once every PRUNE_EVERY_SECONDS per
    process, and again at the next tick while a full batch says more are waiting."""
    return PACE.batch(prune, PRUNE_BATCH)
