"""A user message arrives: the one path every door takes (A2A message/send, an AG-UI run,
an ACP prompt, the dashboard's launcher and answer forms).

What happens depends only on the task it is for, never on the door:
- no task named: a new task of the skill (checked), in the given context;
- a task waiting for input: the message is the answer, validated against the open request
  (a bad answer is refused and the task keeps waiting);
- a submitted or working task: appended to its history (the agent reads it);
- a paused task: refused — resume it first;
- a finished task: refused (A2A: start a new task that references it), or — for doors
  that hold a conversation (`after_end="new_task"`: AG-UI threads, ACP sessions) — a new
  task in the same context.

A message is delivered once (`receipts.py`): the same `messageId` from the same caller
(tenant) within TASKDECK IDEMPOTENCY_HOURS returns the first delivery's task, as it is now,
with `repeated=True`, and writes nothing (no message, event or job); the same messageId
with different parts is refused. Doors that make their own ids (AG-UI, ACP, the dashboard:
a fresh one per request) never repeat one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, Literal

from django.db import IntegrityError, transaction

from a2a import conf
from a2a.errors import ValidationFailed
from a2a.input_requests import RESPONSE_TYPE
from a2a.lifecycle import TERMINAL, State
from a2a.models import MessageReceipt, Task
from a2a.services import receipts
from a2a.services._core import Actor, IncomingMessage, Origin, lock
from a2a.services.tasks import add_message, create_task


@dataclass(frozen=True)
class Delivered:
    task: Task
    created: bool  # a new task was started for the message
    answered: bool  # the message answered the task's open input request
    # The caller had sent this message already: `task` is the first delivery's (as it is
    # now; `created`/`answered` as they were then) and nothing was written this time.
    repeated: bool = False


class _SentMeanwhile(Exception):
    """A concurrent send of the same message committed its receipt first."""


def receive_message(
    message: IncomingMessage,
    *,
    actor: Actor,
    task_id: str | None = None,
    context_id: str | None = None,
    skill: str | None = None,
    metadata: dict[str, Any] | None = None,
    origin: Origin | None = None,
    after_end: Literal["refuse", "new_task"] = "refuse",
) -> Delivered:
    """Deliver a user message (see the module docstring). Raises TaskNotFound,
    ValidationFailed (bad message, skill, answer, context) or NotAllowedNow (paused,
    finished); nothing is written then. `skill` defaults to TASKDECK DEFAULT_SKILL.
    A repeated messageId (module docstring) returns the first delivery, `repeated=True`."""
    deliver = partial(
        _deliver, message, actor, task_id, context_id, skill, metadata, origin, after_end
    )
    within = receipts.window()
    if within is None:
        return deliver()
    content = receipts.digest(message.parts)
    for _ in range(2):
        try:
            return _deliver_once(deliver, message, actor, content, within)
        except _SentMeanwhile:  # the concurrent send won: its result is ours
            first = receipts.find(actor.tenant, message.message_id, within)
            if first is not None:
                return _repeat(first, content, actor)
            # its task was deleted the moment it committed: deliver afresh, once
    raise RuntimeError(f"message {message.message_id!r} lost two races in a row")


def _deliver_once(
    deliver: Callable[[], Delivered],
    message: IncomingMessage,
    actor: Actor,
    content: str,
    within: timedelta,
) -> Delivered:
    """Deliver and write the receipt in one transaction (a savepoint when the door holds
    one: a lost race rolls back this delivery only and the door's transaction goes on)."""
    with transaction.atomic():
        first = receipts.find(actor.tenant, message.message_id, within)
        if first is not None:
            return _repeat(first, content, actor)
        delivered = deliver()
        try:
            receipts.keep(
                actor.tenant,
                message.message_id,
                content,
                delivered.task.id,
                created=delivered.created,
                answered=delivered.answered,
            )
        except IntegrityError:
            raise _SentMeanwhile from None  # rolls the whole delivery back
        return delivered


def _repeat(first: MessageReceipt, content: str, actor: Actor) -> Delivered:
    task = receipts.first_task(first, content, actor)
    return Delivered(task, created=first.created, answered=first.answered, repeated=True)


def _deliver(
    message: IncomingMessage,
    actor: Actor,
    task_id: str | None,
    context_id: str | None,
    skill: str | None,
    metadata: dict[str, Any] | None,
    origin: Origin | None,
    after_end: Literal["refuse", "new_task"],
) -> Delivered:
    if task_id is None:
        return Delivered(
            _new(message, actor, skill, context_id, metadata, origin), created=True, answered=False
        )
    with transaction.atomic():
        current = lock(task_id, actor)  # the state read here is the state the message meets
        if context_id and context_id != current.context_id:
            raise ValidationFailed({"message.contextId": ["does not match the task's contextId"]})
        if current.state in TERMINAL and after_end == "new_task":
            skill = skill or current.skill
            task = _new(message, actor, skill, current.context_id, metadata, origin)
            return Delivered(task, created=True, answered=False)
        waiting = current.state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED)
        task = add_message(task_id, message, actor=actor)
        return Delivered(task, created=False, answered=waiting)


def answer_input(
    task_id: str,
    request_id: str,
    values: dict[str, Any],
    *,
    actor: Actor,
    via: str,
) -> Delivered:
    """Answer a task's open input request with field values (a form, a permission choice,
    an AG-UI resume): the structured `a2a.input.response` message, through the same path
    as any message, so the same validation applies. `via` names the door (message
    metadata)."""
    message = IncomingMessage(
        message_id=f"{via}-{uuid.uuid4()}",
        parts=[
            {
                "kind": "data",
                "data": {"type": RESPONSE_TYPE, "requestId": request_id, "values": values},
            }
        ],
        metadata={"via": via},
    )
    return receive_message(message, actor=actor, task_id=task_id)


def _new(
    message: IncomingMessage,
    actor: Actor,
    skill: str | None,
    context_id: str | None,
    metadata: dict[str, Any] | None,
    origin: Origin | None,
) -> Task:
    return create_task(
        message,
        actor=actor,
        skill=skill or conf.TASKDECK.default_skill,
        context_id=context_id,
        metadata=metadata,
        origin=origin,
    )
