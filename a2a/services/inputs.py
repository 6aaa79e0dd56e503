"""Structured input requests (`input-required`) and their answers:
docs/design/input-requests.md."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from a2a.errors import NotAllowedNow, ValidationFailed
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
from a2a.lifecycle import Action, State, move
from a2a.models import Task, TaskEvent
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
        _ask(task, actor, explanation, canonical, number, m.to)
    return canonical


def _ask(
    task: Task,
    actor: Actor,
    explanation: str,
    canonical: dict[str, Any],
    number: int,
    to: State,
    **data: Any,
) -> None:
    """The asking both `request_input` and `ask_again` write, under the task's lock: the
    agent's message holding the explanation and the request, the task's open request, its
    state, and one `input_requested` event (`data`: what the event says besides)."""
    at = now()
    msg = _agent_message(task, explanation, at, [{"kind": "data", "data": canonical}])
    task.status_message = msg
    task.input_request = canonical
    task.input_request_count = number
    previous = set_state(task, to, at)
    record(
        task,
        EventKind.INPUT_REQUESTED,
        actor,
        at,
        from_state=previous,
        reason=explanation,
        data={
            "requestId": canonical["requestId"],
            "number": number,
            "messageSeq": msg.seq,
            **data,
        },
        fields=(
            "state",
            "status_timestamp",
            "status_message",
            "input_request",
            "input_request_count",
        ),
    )


def ask_again(task_id: str, *, actor: Actor, withdrawn: str) -> dict[str, Any]:
    """Withdraw the open request `withdrawn`, unanswered, and ask the same question again
    under a new requestId, in one change: its asker is gone (the supervisor of a hosted
    ACP agent that was killed while the agent waited), and an answer to it would reach
    nobody. The task stays `input-required`; one `input_requested` event names the
    withdrawn request (`withdrawnRequestId`), and an answer naming it is refused from then
    on (`provide_input`). NotAllowedNow when `withdrawn` is not the open request (it was
    answered, or the task moved on meanwhile): nothing changes. Returns the new request."""
    with transaction.atomic():
        task = lock(task_id, actor)
        old = task.input_request or {}
        if task.state != State.INPUT_REQUIRED or old.get("requestId") != withdrawn:
            raise NotAllowedNow(task.state, f"the request {withdrawn!r} is not open")
        number = task.input_request_count + 1
        canonical = parse_request({**old, "requestId": f"req-{task.id}-{number}"})
        explanation = text_of(task.status_message.parts) if task.status_message else ""
        _ask(
            task, actor, explanation, canonical, number, State.INPUT_REQUIRED,
            withdrawnRequestId=withdrawn,
        )  # fmt: skip
    return canonical


def _refuse_withdrawn(task_id: str, request: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    """An answer that names a request withdrawn by `ask_again`: refused, saying so and
    naming the one that is open (the plain "must name the open request" would leave the
    person wondering where their question went)."""
    index = find_data_part_index(parts, RESPONSE_TYPE)
    if index is None:
        return
    named = parts[index]["data"].get("requestId")
    if not named or named == request.get("requestId"):
        return
    if TaskEvent.objects.filter(
        task_id=task_id, kind=EventKind.INPUT_REQUESTED, data__withdrawnRequestId=named
    ).exists():
        raise ValidationFailed(
            {
                f"message.parts.{index}.data.requestId": [
                    f"the request {named!r} was withdrawn unanswered (whoever asked it stopped) "
                    f"and asked again as {request.get('requestId')!r}: answer that one"
                ]
            }
        )


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
        _refuse_withdrawn(task.id, request, message.parts)
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
