"""Structured input requests (`input-required`) and their answers (PROTOCOL.md §3)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from a2a.errors import ValidationFailed
from a2a.input_requests import (
    RESPONSE_TYPE,
    decision_of,
    find_data_part,
    parse_request,
    validate_values,
)
from a2a.lifecycle import Action, move
from a2a.services._core import Actor, IncomingMessage, append_message, lock, now, record, set_state
from a2a.services.tasks import _agent_message


def request_input(
    task_id: str,
    *,
    actor: Actor,
    explanation: str,
    request: dict[str, Any],
    auth: bool = False,
) -> dict[str, Any]:
    """Move a working task to `input-required` (or `auth-required`) with a status message
    holding the explanation (TextPart) and the request (DataPart). Returns the request in
    canonical form; its `requestId` is generated when the agent gave none."""
    with transaction.atomic():
        task = lock(task_id)
        m = move(task.state, Action.REQUEST_AUTH if auth else Action.REQUEST_INPUT)
        number = task.input_request_count + 1
        raw = {"requestId": f"req-{task.id}-{number}", **request}
        canonical = parse_request(raw)
        at = now()
        msg = _agent_message(task, explanation, at, [{"kind": "data", "data": canonical}])
        task.status_message = msg
        task.input_request = canonical
        task.input_request_count = number
        previous = set_state(task, m.to, at)
        record(
            task,
            "input_requested",
            actor,
            at,
            from_state=previous,
            reason=explanation,
            data={"requestId": canonical["requestId"], "number": number, "messageSeq": msg.seq},
            fields=(
                "state",
                "status_timestamp",
                "status_message",
                "input_request",
                "input_request_count",
            ),
        )
    return canonical


def provide_input(task_id: str, message: IncomingMessage, *, actor: Actor):
    """Answer a waiting task. A DataPart `a2a.input.response` is validated against the open
    request's fields; a bad answer raises ValidationFailed and the task keeps waiting."""
    with transaction.atomic():
        task = lock(task_id)
        m = move(task.state, Action.PROVIDE_INPUT)
        request = task.input_request or {}
        response = find_data_part(message.parts, RESPONSE_TYPE)
        values: dict[str, Any] = {}
        if response is not None:
            expected = request.get("requestId")
            if expected and response.get("requestId") not in (None, expected):
                raise ValidationFailed(
                    {"message.parts.requestId": [f"does not match the open request {expected!r}"]}
                )
            values = validate_values(request, response.get("values", {}))
        elif any(f.get("required") for f in request.get("fields") or []):
            raise ValidationFailed(
                {"message.parts": [f"expected a DataPart of type {RESPONSE_TYPE} with values"]}
            )
        at = now()
        msg = append_message(task, message, at)
        task.input_request = None
        previous = set_state(task, m.to, at)
        record(
            task,
            "input_provided",
            actor,
            at,
            from_state=previous,
            data={
                "requestId": request.get("requestId"),
                "values": values,
                "decision": decision_of(request, values),
                "messageSeq": msg.seq,
            },
            fields=("state", "status_timestamp", "input_request"),
        )
    return task
