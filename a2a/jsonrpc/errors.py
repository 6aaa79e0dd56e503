"""JSON-RPC error codes (PROTOCOL.md §2) and the mapping from domain errors to them.

`error.data` explains in words and names fields; it never carries a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from a2a.errors import NotAllowedNow, StaleHandle, TaskNotFound, Unsupported, refusal_hint
from a2a.lifecycle import PAUSED, Action, Dialect, TransitionRefused
from a2a.rate_limits import RateLimited
from a2a.validation import ValidationFailed

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
VERSION_NOT_SUPPORTED = -32009
NOT_PAUSABLE = -32011
STALE_HANDLE = -32012
NOT_PAUSED = -32013
BINDU_NOT_PAUSABLE = -32040
BINDU_NOT_RESUMABLE = -32041
RATE_LIMITED = -32029  # Taskdeck's: HTTP 429 with Retry-After (a2a/rate_limits.py)

MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    TASK_NOT_FOUND: "Task not found",
    TASK_NOT_CANCELABLE: "Task cannot be canceled",
    PUSH_NOT_SUPPORTED: "Push Notification is not supported",
    UNSUPPORTED_OPERATION: "This operation is not supported now",
    CONTENT_TYPE_NOT_SUPPORTED: "Incompatible content types",
    VERSION_NOT_SUPPORTED: "Version not supported",
    NOT_PAUSABLE: "Task cannot be paused in its current state",
    STALE_HANDLE: "Resume handle does not match the current suspension",
    NOT_PAUSED: "Task is not paused",
    BINDU_NOT_PAUSABLE: "Task not pausable",
    BINDU_NOT_RESUMABLE: "Task not resumable",
    RATE_LIMITED: "Too many requests",
}


@dataclass
class JsonRpcError(Exception):
    code: int
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    http_status: int = 200

    @property
    def message(self) -> str:
        return MESSAGES.get(self.code, "Error")

    def as_dict(self, version: str = "0.3") -> dict[str, Any]:
        data = {"detail": self.detail, **self.data} if self.detail else dict(self.data)
        if version == "1.0":
            return self._as_dict_10(data)
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if data:
            out["data"] = data
        return out

    def _as_dict_10(self, data: dict[str, Any]) -> dict[str, Any]:
        """A2A 1.0: `error.data` is a list holding a google.rpc.ErrorInfo (metadata values
        are strings) and, for bad params, a google.rpc.BadRequest with field violations."""
        out: dict[str, Any] = {"code": self.code, "message": self.detail or self.message}
        reason = REASONS_10.get(self.code)
        if reason is None:  # parse error, unknown method: plain JSON-RPC, no data
            return out
        metadata = {
            k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
            for k, v in data.items()
        }
        details: list[dict[str, Any]] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": metadata,
            }
        ]
        if self.code == INVALID_PARAMS and data.get("errors"):
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [
                        {"field": field_, "description": "; ".join(msgs)}
                        for field_, msgs in data["errors"].items()
                    ],
                }
            )
        out["data"] = details
        return out


REASONS_10 = {
    INVALID_REQUEST: "INVALID_REQUEST",
    INVALID_PARAMS: "INVALID_PARAMS",
    INTERNAL_ERROR: "INTERNAL_ERROR",
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    # Taskdeck's pause extension: ErrorInfo reasons in the same style
    NOT_PAUSABLE: "TASK_NOT_PAUSABLE",
    STALE_HANDLE: "RESUME_HANDLE_MISMATCH",
    NOT_PAUSED: "TASK_NOT_PAUSED",
    BINDU_NOT_PAUSABLE: "TASK_NOT_PAUSABLE",
    BINDU_NOT_RESUMABLE: "TASK_NOT_RESUMABLE",
}


def invalid_params(errors: dict[str, list[str]]) -> JsonRpcError:
    first, msgs = next(iter(errors.items()))
    return JsonRpcError(
        INVALID_PARAMS, f"{first}: {msgs[0]}" if first else msgs[0], {"errors": errors}
    )


def _refused(exc: TransitionRefused) -> int:
    bindu = exc.dialect is Dialect.BINDU
    if exc.action is Action.PAUSE:
        return BINDU_NOT_PAUSABLE if bindu else NOT_PAUSABLE
    if exc.action is Action.PARK:
        return NOT_PAUSABLE
    if exc.action is Action.RESUME:
        return BINDU_NOT_RESUMABLE if bindu else NOT_PAUSED
    if exc.action is Action.CANCEL:
        return TASK_NOT_CANCELABLE
    return UNSUPPORTED_OPERATION


def from_domain(exc: Exception, dialect: Dialect = Dialect.RFC) -> JsonRpcError | None:
    """The wire error for a domain error, or None for an unexpected exception."""
    if isinstance(exc, TaskNotFound):
        return JsonRpcError(TASK_NOT_FOUND, str(exc), {"taskId": exc.task_id})
    if isinstance(exc, TransitionRefused):
        return JsonRpcError(_refused(exc), refusal_hint(exc), {"state": exc.state.value})
    if isinstance(exc, StaleHandle):
        return JsonRpcError(STALE_HANDLE, str(exc), {"handle": exc.given})
    if isinstance(exc, NotAllowedNow):
        state = exc.state.value
        if dialect is Dialect.BINDU and exc.state in PAUSED:
            state = "suspended"  # a Bindu client knows no paused-by-* states
            return JsonRpcError(
                UNSUPPORTED_OPERATION,
                "task is suspended; resume it (tasks/resume) before sending messages",
                {"state": state},
            )
        return JsonRpcError(UNSUPPORTED_OPERATION, str(exc), {"state": state})
    if isinstance(exc, ValidationFailed):
        return invalid_params(exc.errors)
    if isinstance(exc, Unsupported):
        return JsonRpcError(UNSUPPORTED_OPERATION, str(exc))
    if isinstance(exc, RateLimited):
        data = {"retryAfter": exc.retry_after}
        return JsonRpcError(RATE_LIMITED, str(exc), data, http_status=429)
    return None
