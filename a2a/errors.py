"""Domain errors raised by `a2a.services`. Transports map them to wire codes
(see `a2a.jsonrpc.errors`, the ACP door's errors); nothing here knows about JSON-RPC."""

from __future__ import annotations

from a2a.lifecycle import Action, Dialect, State, TransitionRefused
from a2a.validation import ValidationFailed

__all__ = [
    "ContentTypeNotSupported",
    "NotAllowedNow",
    "StaleHandle",
    "TaskError",
    "TaskNotFound",
    "TransitionRefused",
    "Unsupported",
    "ValidationFailed",
]


class TaskError(Exception):
    """Base of the services' own errors."""


class TaskNotFound(TaskError):
    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        super().__init__(f"task {task_id!r} not found")


class StaleHandle(TaskError):
    """The resume handle names a suspension that is not the task's current one."""

    def __init__(self, given: str) -> None:
        self.given = given
        super().__init__(f"handle {given!r} does not match the task's current suspension")


class NotAllowedNow(TaskError):
    """A request the task cannot take in its current state, e.g. a message to a paused task."""

    def __init__(self, state: State, message: str) -> None:
        self.state = state
        super().__init__(message)


class ContentTypeNotSupported(TaskError):
    """A message part's media type is not one the skill accepts (its card's
    `inputModes`): A2A's ContentTypeNotSupportedError."""

    def __init__(self, field: str, media_type: str, accepted: list[str]) -> None:
        self.field, self.media_type, self.accepted = field, media_type, list(accepted)
        super().__init__(
            f"{field}: media type {media_type!r} is not accepted; "
            f"this skill takes {', '.join(accepted)}"
        )


class Unsupported(TaskError):
    """Something Taskdeck does not offer (e.g. an extended agent card)."""


def refusal_hint(exc: TransitionRefused) -> str:
    """A human sentence for a refused move, naming what would work instead."""
    s, a = exc.state, exc.action
    if a is Action.RESUME:
        return f"task is {s.value}, not paused, so it cannot be resumed"
    if (
        a is Action.PAUSE
        and exc.dialect is Dialect.BINDU
        and s
        in {
            State.PAUSED_BY_CLIENT,
            State.PAUSED_BY_AGENT,
        }
    ):
        return "task is already suspended"
    if a in (Action.PAUSE, Action.PARK):
        if s in (State.INPUT_REQUIRED, State.AUTH_REQUIRED):
            return f"task is {s.value}; answer it (or cancel it) instead of pausing"
        return f"task is {s.value}; only active tasks can be paused"
    if a is Action.CANCEL:
        return f"task is already {s.value} and cannot be canceled"
    return str(exc)
