"""The subscriber registry: how the rest of Taskdeck hears about task changes.

`a2a` imports nobody; others (the AG-UI projector, the runtime, streams) register here in
their AppConfig.ready(). Two phases, per docs/design/house-rules.md, D3:

- in-transaction subscribers run inside the writer's transaction, so what they write commits
  or rolls back with the change (push deliveries, wake-ups, the ACP host's hooks);
- on-commit subscribers run after the commit and only then (the AG-UI projection, fan-out
  to sockets and streams, enqueuing work). A rolled-back change reaches none of them.

The projection runs after commit (docs/design/projection-after-commit.md, D8), so that an
on-commit callback lost with its process loses no change, the writer records a durable
"due for projection" row (a2a.models.ProjectionDue) with every event — once a projection
has said it consumes them (`set_projected`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db import transaction

if TYPE_CHECKING:
    from a2a.models import TaskEvent

log = logging.getLogger(__name__)

Subscriber = Callable[["TaskEvent"], None]
_in_transaction: list[Subscriber] = []
_on_commit: list[Subscriber] = []
_projected = False


def set_projected(on: bool) -> None:
    """A projection consumes ProjectionDue rows (agui's ready()): writers record them."""
    global _projected
    _projected = on


def projected() -> bool:
    return _projected


def subscribe(fn: Subscriber, *, on_commit: bool = False, first: bool = False) -> Subscriber:
    """Register `fn`; registering the same function twice is a no-op (ready() may rerun).
    `first`: before the subscribers already registered (the AG-UI projection's hand-over,
    which costs the writer a set insertion: the projector thread should not wait behind
    an announcement's round trip to Redis)."""
    target = _on_commit if on_commit else _in_transaction
    if fn not in target:
        if first:
            target.insert(0, fn)
        else:
            target.append(fn)
    return fn


def unsubscribe(fn: Subscriber) -> None:
    for target in (_in_transaction, _on_commit):
        if fn in target:
            target.remove(fn)


def publish(event: TaskEvent) -> None:
    """Called by services right after appending `event`, inside their transaction."""
    for fn in list(_in_transaction):
        fn(event)  # an error here rolls the change back: the projection must not drift
    if _on_commit:
        transaction.on_commit(lambda: _deliver(event))


def _deliver(event: TaskEvent) -> None:
    for fn in list(_on_commit):
        try:
            fn(event)
        except Exception:  # one broken listener must not starve the others
            log.exception("on-commit subscriber %r failed for event %s", fn, event.pk)
