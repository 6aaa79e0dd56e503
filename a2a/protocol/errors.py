"""A2A errors, shared by the three bindings (docs/design/a2a-surface.md, D24; A2A 1.0 §5.4).

One error, three renderings: the JSON-RPC code is its identity (`code`); the HTTP+JSON
binding answers `REST_STATUS` and the gRPC binding `GRPC_STATUS` for it, and all of them
carry the same 1.0 details (`details()`: a google.rpc.ErrorInfo, plus a BadRequest for bad
params). `from_domain` maps the services' errors; a binding never maps them itself.
`error.data` explains in words and names fields; it never carries a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from a2a.auth import Unauthenticated
from a2a.db_faults import is_infrastructure
from a2a.errors import (
    ContentTypeNotSupported,
    NotAllowedNow,
    StaleHandle,
    TaskNotFound,
    Unsupported,
    refusal_hint,
)
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
INVALID_AGENT_RESPONSE = -32006
EXTENDED_CARD_NOT_CONFIGURED = -32007
EXTENSION_SUPPORT_REQUIRED = -32008
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
    INVALID_AGENT_RESPONSE: "Invalid agent response",
    EXTENDED_CARD_NOT_CONFIGURED: "Authenticated Extended Card is not configured",
    EXTENSION_SUPPORT_REQUIRED: "Extension support required",
    VERSION_NOT_SUPPORTED: "Version not supported",
    NOT_PAUSABLE: "Task cannot be paused in its current state",
    STALE_HANDLE: "Resume handle does not match the current suspension",
    NOT_PAUSED: "Task is not paused",
    BINDU_NOT_PAUSABLE: "Task not pausable",
    BINDU_NOT_RESUMABLE: "Task not resumable",
    RATE_LIMITED: "Too many requests",
}


@dataclass
class ProtocolError(Exception):
    code: int
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    http_status: int = 200
    # raised by the method itself (its params or its handler), not by the checks before it:
    # a 0.3 stream method answers those inside its SSE stream (a2a.jsonrpc.views)
    in_call: bool = False

    @property
    def message(self) -> str:
        return MESSAGES.get(self.code, "Error")

    def as_dict(self, version: str = "0.3") -> dict[str, Any]:
        data = {"detail": self.detail, **self.data} if self.detail else dict(self.data)
        if version == "1.0":
            return self._as_dict_10()
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if data:
            out["data"] = data
        return out

    def _as_dict_10(self) -> dict[str, Any]:
        """A2A 1.0 JSON-RPC: `error.data` is the list of `details()`."""
        out: dict[str, Any] = {"code": self.code, "message": self.detail or self.message}
        details = self.details()
        if details:  # parse error, unknown method: plain JSON-RPC, no data
            out["data"] = details
        return out

    @property
    def text(self) -> str:
        """The one-line message of the 1.0 bindings: the detail, else the code's name."""
        return self.detail or self.message

    def details(self) -> list[dict[str, Any]]:
        """A2A 1.0's error details, the same on every binding: a google.rpc.ErrorInfo
        (metadata values are strings) and, for bad params, a google.rpc.BadRequest with
        field violations. Empty for plain JSON-RPC errors (parse error, unknown method)."""
        reason = REASONS_10.get(self.code)
        if reason is None:
            return []
        data = {"detail": self.detail, **self.data} if self.detail else dict(self.data)
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
        return details


REASONS_10 = {
    INVALID_REQUEST: "INVALID_REQUEST",
    INVALID_PARAMS: "INVALID_PARAMS",
    INTERNAL_ERROR: "INTERNAL_ERROR",
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    INVALID_AGENT_RESPONSE: "INVALID_AGENT_RESPONSE",
    EXTENDED_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    EXTENSION_SUPPORT_REQUIRED: "EXTENSION_SUPPORT_REQUIRED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    # Taskdeck's pause extension: ErrorInfo reasons in the same style
    NOT_PAUSABLE: "TASK_NOT_PAUSABLE",
    STALE_HANDLE: "RESUME_HANDLE_MISMATCH",
    NOT_PAUSED: "TASK_NOT_PAUSED",
    BINDU_NOT_PAUSABLE: "TASK_NOT_PAUSABLE",
    BINDU_NOT_RESUMABLE: "TASK_NOT_RESUMABLE",
}


# A2A 1.0 §5.4: each error's status on the HTTP+JSON and gRPC bindings (by gRPC code name).
# Taskdeck's own codes follow the same reasoning: a refused move is a precondition that
# failed (409 / FAILED_PRECONDITION, like TaskNotCancelable); too many requests is 429 /
# RESOURCE_EXHAUSTED. A ProtocolError whose http_status is not 200 (401, 403, 413, 429)
# keeps that status on HTTP+JSON.
REST_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    INTERNAL_ERROR: 500,
    TASK_NOT_FOUND: 404,
    TASK_NOT_CANCELABLE: 409,
    PUSH_NOT_SUPPORTED: 400,
    UNSUPPORTED_OPERATION: 400,
    CONTENT_TYPE_NOT_SUPPORTED: 415,
    INVALID_AGENT_RESPONSE: 502,
    EXTENDED_CARD_NOT_CONFIGURED: 400,
    EXTENSION_SUPPORT_REQUIRED: 400,
    VERSION_NOT_SUPPORTED: 400,
    NOT_PAUSABLE: 409,
    STALE_HANDLE: 409,
    NOT_PAUSED: 409,
    BINDU_NOT_PAUSABLE: 409,
    BINDU_NOT_RESUMABLE: 409,
    RATE_LIMITED: 429,
}
GRPC_STATUS = {
    PARSE_ERROR: "INVALID_ARGUMENT",
    INVALID_REQUEST: "INVALID_ARGUMENT",
    METHOD_NOT_FOUND: "UNIMPLEMENTED",
    INVALID_PARAMS: "INVALID_ARGUMENT",
    INTERNAL_ERROR: "INTERNAL",
    TASK_NOT_FOUND: "NOT_FOUND",
    TASK_NOT_CANCELABLE: "FAILED_PRECONDITION",
    PUSH_NOT_SUPPORTED: "UNIMPLEMENTED",
    UNSUPPORTED_OPERATION: "UNIMPLEMENTED",
    CONTENT_TYPE_NOT_SUPPORTED: "INVALID_ARGUMENT",
    INVALID_AGENT_RESPONSE: "INTERNAL",
    EXTENDED_CARD_NOT_CONFIGURED: "FAILED_PRECONDITION",
    EXTENSION_SUPPORT_REQUIRED: "FAILED_PRECONDITION",
    VERSION_NOT_SUPPORTED: "UNIMPLEMENTED",
    NOT_PAUSABLE: "FAILED_PRECONDITION",
    STALE_HANDLE: "FAILED_PRECONDITION",
    NOT_PAUSED: "FAILED_PRECONDITION",
    BINDU_NOT_PAUSABLE: "FAILED_PRECONDITION",
    BINDU_NOT_RESUMABLE: "FAILED_PRECONDITION",
    RATE_LIMITED: "RESOURCE_EXHAUSTED",
}
# A refusal before the call runs, by its HTTP status (no key: 401, a missing scope: 403,
# no such route: 404 or 405, a body too large: 413), as a gRPC code name.
GRPC_BY_HTTP = {
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    413: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}

# How long a client is told to wait before it tries again when the database is unreachable
UNAVAILABLE_RETRY_AFTER = 5


def unavailable() -> ProtocolError:
    """The database cannot be reached (a restart, a failover: a2a.runtime.faults): -32603
    with HTTP 503 and Retry-After on every door, so that a client retries instead of
    reading an HTML error page (docs/protocol.md, "During a database outage")."""
    return ProtocolError(
        INTERNAL_ERROR,
        "the database is unavailable; try again shortly",
        {"reason": "database-unavailable", "retryAfter": UNAVAILABLE_RETRY_AFTER},
        http_status=503,
    )


def rest_status(error: ProtocolError) -> int:
    return error.http_status if error.http_status != 200 else REST_STATUS.get(error.code, 400)


def grpc_status(error: ProtocolError) -> str:
    return GRPC_BY_HTTP.get(error.http_status) or GRPC_STATUS.get(error.code, "UNKNOWN")


def invalid_params(errors: dict[str, list[str]]) -> ProtocolError:
    first, msgs = next(iter(errors.items()))
    return ProtocolError(
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


def from_domain(exc: Exception, dialect: Dialect = Dialect.RFC) -> ProtocolError | None:
    """The wire error for a domain error, or None for an unexpected exception. The
    database being unreachable is not the caller's fault nor a bug: `unavailable()`."""
    if is_infrastructure(exc):
        return unavailable()
    if isinstance(exc, TaskNotFound):
        return ProtocolError(TASK_NOT_FOUND, str(exc), {"taskId": exc.task_id})
    if isinstance(exc, TransitionRefused):
        return ProtocolError(_refused(exc), refusal_hint(exc), {"state": exc.state.value})
    if isinstance(exc, StaleHandle):
        return ProtocolError(STALE_HANDLE, str(exc), {"handle": exc.given})
    if isinstance(exc, NotAllowedNow):
        state = exc.state.value
        if dialect is Dialect.BINDU and exc.state in PAUSED:
            state = "suspended"  # a Bindu client knows no paused-by-* states
            return ProtocolError(
                UNSUPPORTED_OPERATION,
                "task is suspended; resume it (tasks/resume) before sending messages",
                {"state": state},
            )
        return ProtocolError(UNSUPPORTED_OPERATION, str(exc), {"state": state})
    if isinstance(exc, ValidationFailed):
        return invalid_params(exc.errors)
    if isinstance(exc, ContentTypeNotSupported):
        data = {"field": exc.field, "mediaType": exc.media_type, "acceptedModes": exc.accepted}
        return ProtocolError(CONTENT_TYPE_NOT_SUPPORTED, str(exc), data)
    if isinstance(exc, Unsupported):
        return ProtocolError(UNSUPPORTED_OPERATION, str(exc))
    if isinstance(exc, Unauthenticated):
        return ProtocolError(INVALID_REQUEST, str(exc), http_status=401)
    if isinstance(exc, RateLimited):
        data = {"retryAfter": exc.retry_after}
        return ProtocolError(RATE_LIMITED, str(exc), data, http_status=429)
    return None
