"""What the two HTTP bindings (JSON-RPC, HTTP+JSON) check of a request body before its
envelope or params: its declared size, its media type, and that it is JSON Taskdeck can
store. Each raises or returns the same ProtocolError on both bindings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2a import conf, jsonsafe

from .errors import CONTENT_TYPE_NOT_SUPPORTED, INVALID_REQUEST, PARSE_ERROR, ProtocolError


class ClientGone(ProtocolError):
    """The client closed its connection before its body was read: Django's ASGI handler
    then closes the request's body file while the view's thread has yet to read it
    (ValueError "I/O operation on closed file", seen at the end of every wrk run). Nobody
    reads the answer; it is a refusal, not a server failure, so no traceback is logged."""

    def __init__(self) -> None:
        super().__init__(INVALID_REQUEST, "the connection closed before the body was read")


def body_of(request: Any) -> bytes:
    """`request.body`, or ClientGone when the client went away first (see ClientGone)."""
    try:
        return request.body
    except ValueError:
        raise ClientGone() from None


def check_size(headers: Mapping[str, str]) -> None:
    """413 for a Content-Length over TASKDECK_MAX_REQUEST_BYTES (Daphne's patch refuses it
    earlier, dashboard/body_limit.py; this holds under any other server)."""
    limit = conf.TASKDECK.max_request_bytes
    if int(headers.get("Content-Length") or 0) > limit:
        raise ProtocolError(INVALID_REQUEST, f"request body over {limit} bytes", http_status=413)


def content_type_error(headers: Mapping[str, str], what: str) -> ProtocolError | None:
    """JSON only (`application/json` or any `+json`); no Content-Type is taken as JSON."""
    content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type and content_type != "application/json" and not content_type.endswith("+json"):
        return ProtocolError(
            CONTENT_TYPE_NOT_SUPPORTED, f"send {what} as application/json, not {content_type}"
        )
    return None


def json_of(body: bytes) -> Any:
    """The body as JSON (`jsonsafe.loads`: numbers JSON can write back), or PARSE_ERROR."""
    try:
        return jsonsafe.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(PARSE_ERROR, f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError(PARSE_ERROR, "body is nested too deeply") from None
