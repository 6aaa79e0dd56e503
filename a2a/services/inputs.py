"""Structured input requests (`input-required`) and their answers:
docs/design/input-requests.md."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from a2a.errors import ValidationFailed
from a2a.event_kinds import EventKind
from a2a.formats import text_of
from a2a.input_requests import (
    RESPONSE_TYPE,
    decision_of,
    find_data_part_index,
    parse_request,
    validate_values,
    values_from_text,
)
from a2a.lifecycle import Action, move
from a2a.services import checks
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
    checks.text(explanation, "explanation", limit=checks.MAX_TEXT)
    if not isinstance(request, dict):
        raise ValidationFailed({"request": ["must be an object"]})
    checks.storable(request, "request")
    with transaction.atomic():
        task = lock(task_id, actor)
        m = move(task.state, Action.REQUEST_AUTH if auth else Action.REQUEST_INPUT)
        number = task.input_request_count + 1
        raw = {"requestId": f"req-{task.id}-{number}", **request}
        try:
            canonical = parse_request(raw)
        except ValidationFailed as exc:
            raise exc.prefixed("request") from None
        at = now()
        msg = _agent_message(task, explanation, at, [{"kind": "data", "data": canonical}])
        task.status_message = msg
        task.input_request = canonical
        task.input_request_count = number
        previous = set_state(task, m.to, at)
        record(
            task,
            EventKind.INPUT_REQUESTED,
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


def _checked_answer(request: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The validated values of the answer in `parts`; errors name the part's path."""
    index = find_data_part_index(parts, RESPONSE_TYPE)
    if index is None:
        said = text_of(parts)
        if said:  # a typed answer: the text is the value of the request's one field
            try:
                return validate_values(request, values_from_text(request, said))
            except ValidationFailed as exc:
                raise exc.prefixed("message.parts") from None
        if any(f.get("required") for f in request.get("fields") or []):
            raise ValidationFailed(
                {"message.parts": [f"expected a DataPart of type {RESPONSE_TYPE} with values"]}
            )
        return {}
    response = parts[index]["data"]
    where = f"message.parts.{index}.data"
    expected = request.get("requestId")
    if response.get("requestId") != expected:
        raise ValidationFailed({f"{where}.requestId": [f"must name the open request {expected!r}"]})
    try:
        return validate_values(request, response.get("values", {}))
    except ValidationFailed as exc:
        raise exc.prefixed(where) from None


def provide_input(task_id: str, message: IncomingMessage, *, actor: Actor):
    """Answer a waiting task. A DataPart `a2a.input.response` is validated against the open
    request's fields; a bad answer raises ValidationFailed and the task keeps waiting. A
    text-only answer fills the request's one field (`values_from_text`)."""
    message.checked()
    with transaction.atomic():
        task = lock(task_id, actor)
        m = move(task.state, Action.PROVIDE_INPUT)
        request = task.input_request or {}
        values = _checked_answer(request, message.parts)
        at = now()
        msg = append_message(task, message, at)
        task.input_request = None
        task.status_message = None  # the request is answered; don't show it as current
        previous = set_state(task, m.to, at)
        record(
            task,
            EventKind.INPUT_PROVIDED,
            actor,
            at,
            from_state=previous,
            data={
                "requestId": request.get("requestId"),
                "values": values,
                "decision": decision_of(request, values),
                "messageSeq": msg.seq,
            },
            fields=("state", "status_timestamp", "input_request", "status_message"),
        )
    return task
