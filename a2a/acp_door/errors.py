"""Domain errors as ACP JSON-RPC errors, with A2A's codes where the meaning is the same
(docs/design/acp-door.md, D68; docs/design/a2a-surface.md, D24). `error.data` explains in
words and names fields, never a traceback."""

from __future__ import annotations

import re
from typing import Any

from acp import RequestError

from a2a.errors import (
    ContentTypeNotSupported,
    NotAllowedNow,
    StaleHandle,
    TaskNotFound,
    refusal_hint,
)
from a2a.lifecycle import Action, TransitionRefused
from a2a.rate_limits import RateLimited
from a2a.validation import ValidationFailed

AUTH_REQUIRED = -32000
NOT_FOUND = -32002
NOT_NOW = -32004
NOT_SUSPENDABLE = -32011
STALE_HANDLE = -32012
NOT_SUSPENDED = -32013
RATE_LIMITED = -32029


class SessionNotFound(Exception):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session {session_id!r}")


def invalid_params(errors: dict[str, list[str]]) -> RequestError:
    detail = "; ".join(f"{k}: {', '.join(v)}" if k else ", ".join(v) for k, v in errors.items())
    return RequestError(-32602, "Invalid params", {"detail": detail, "errors": errors})


# The A2A message a prompt became, as the task services name its places: `message.parts.0.
# data.values.priority` is, to the editor's user, the field `priority` of their answer.
_A2A_PLACE = re.compile(
    r"^(?:message\.)?(?:parts(?:\.\d+)?(?:\.data)?(?:\.|$))?(?:values(?:\.|$))?"
)


def typed_field(place: str) -> str:
    """The field the editor's user typed for a place in the A2A message their prompt
    became ("" for the prompt as a whole): `message.parts.0.data.values.priority` →
    `priority`, `message.parts` → ""."""
    return _A2A_PLACE.sub("", place, count=1)


def invalid_input(errors: dict[str, list[str]]) -> RequestError:
    """-32602 for a domain validation error, its fields named as the user typed them (in
    `detail` and `errors`); the A2A places stay under `data.a2aErrors` when they differ."""
    typed: dict[str, list[str]] = {}
    for place, why in errors.items():
        typed.setdefault(typed_field(place), []).extend(why)
    error = invalid_params(typed)
    if typed.keys() != errors.keys():
        error.data["a2aErrors"] = errors
    return error


def auth_required(detail: str) -> RequestError:
    return RequestError(AUTH_REQUIRED, "Authentication required", {"detail": detail})


def from_domain(exc: Exception) -> RequestError | None:
    """The ACP error for a domain error, or None when `exc` is not one."""
    data: dict[str, Any]
    if isinstance(exc, SessionNotFound):
        return RequestError(NOT_FOUND, "Session not found", {"sessionId": exc.session_id})
    if isinstance(exc, TaskNotFound):
        return RequestError(NOT_FOUND, "Task not found", {"taskId": exc.task_id})
    if isinstance(exc, ValidationFailed):
        return invalid_input(exc.errors)
    if isinstance(exc, ContentTypeNotSupported):  # a resource of a type the mode does not take
        return invalid_params({exc.field: [str(exc).split(": ", 1)[1]]})
    if isinstance(exc, StaleHandle):
        data = {"detail": str(exc), "handle": exc.given}
        return RequestError(STALE_HANDLE, "Resume handle does not match the suspension", data)
    if isinstance(exc, TransitionRefused):
        data = {"detail": refusal_hint(exc), "state": exc.state.value}
        if exc.action is Action.RESUME:
            return RequestError(NOT_SUSPENDED, "Session is not suspended", data)
        if exc.action in (Action.PAUSE, Action.PARK):
            return RequestError(NOT_SUSPENDABLE, "Session cannot be suspended now", data)
        return RequestError(NOT_NOW, "Not possible in the task's state", data)
    if isinstance(exc, RateLimited):
        data = {"detail": str(exc), "retryAfter": exc.retry_after}
        return RequestError(RATE_LIMITED, "Too many requests", data)
    if isinstance(exc, NotAllowedNow):
        return RequestError(NOT_NOW, "Not possible now", {"detail": str(exc), "state": exc.state})
    return None
