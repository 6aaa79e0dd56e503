"""External events: record them and wake every parked task whose conditions they meet."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q

from a2a import access
from a2a.conditions import event_wakes
from a2a.errors import StaleHandle, TransitionRefused, ValidationFailed
from a2a.lifecycle import Dialect
from a2a.models import ExternalEvent, Suspension
from a2a.services import checks
from a2a.services._core import Actor, now
from a2a.services.pausing import resume_task

# onEvent names an event the agent waits for; a trigger is a predicate over events.
CAUSE_OF = {"onEvent": Suspension.Cause.EXTERNAL_EVENT, "trigger": Suspension.Cause.CONDITION_FIRED}


def emit_event(name: str, payload: dict[str, Any] | None, *, actor: Actor) -> ExternalEvent:
    """Record the event and resume the open suspensions it satisfies, each with the payload
    as resume input. Suspensions ended meanwhile (resumed, canceled, held by an operator)
    are skipped: an operator hold supersedes the agent's conditions."""
    checks.text(name, "name", limit=200, blank=False)
    if any(ch.isspace() for ch in name):
        raise ValidationFailed({"name": ["must not contain spaces"]})
    payload = checks.mapping(payload, "payload")
    with transaction.atomic():
        event = ExternalEvent.objects.create(
            name=name, payload=payload, received_at=now(), sent_by=str(actor)
        )
        candidates = access.visible(  # an event wakes only tasks its emitter may act on
            Suspension.objects.filter(
                Q(on_event=name) | Q(trigger_event=name), ended_at__isnull=True
            ),
            actor,
            owner_field="task__owner",
        ).order_by("id")
        woke = []
        for susp in candidates:
            which = event_wakes(susp.conditions, name, payload)
            if which is None:
                continue
            try:
                with transaction.atomic():  # one task's refusal must not undo the others
                    resume_task(
                        susp.task_id,
                        actor=actor,
                        handle=susp.handle,
                        resume_input={"event": name, "payload": payload},
                        cause=CAUSE_OF[which],
                        dialect=Dialect.RFC,
                        reason=f"event {name}",
                    )
            except (StaleHandle, TransitionRefused):
                continue
            woke.append({"taskId": susp.task_id, "handle": susp.handle, "cause": CAUSE_OF[which]})
        event.woke = woke
        event.save(update_fields=["woke"])
    return event
