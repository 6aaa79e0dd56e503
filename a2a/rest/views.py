"""The HTTP+JSON endpoint (everything under /a2a/rest/; A2A 1.0 §11).

Checks in the JSON-RPC door's order, each with its own answer: authentication (401), the
route (404, or 405 with Allow), body size (413), media type (415), JSON (400), then what
every binding checks alike (`a2a.protocol.calls.decide`). Errors are AIP-193 bodies
(`{"error": {code, status, message, details}}`) with the status of A2A 1.0 §5.4 and the
same google.rpc details the other bindings send. Streams are SSE whose `data` is a 1.0
StreamResponse and whose `id` is the TaskEvent id (reconnect with Last-Event-ID).

This binding exists in A2A 1.0 only: a request without `A2A-Version` is read as 1.0 (a
0.3 REST client would call other paths); an explicit other major version is refused.
As in the JSON-RPC door, one worker thread per call decides; only a blocking send comes
back to wait in the event loop.
"""

from __future__ import annotations

import json
import logging
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from a2a.auth import Unauthenticated, authenticate
from a2a.db_faults import discard_connections, in_thread, is_infrastructure
from a2a.protocol import agent_card, calls, http_bodies, status_line, wire10
from a2a.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    ProtocolError,
    from_domain,
    grpc_status,
    invalid_params,
    rest_status,
    unavailable,
)
from a2a.protocol.stream import KEEPALIVE, REVOKED, UNAVAILABLE, StreamPlan, follow

from .routes import BadQuery, NoRoute, Route, query_params, resolve

log = logging.getLogger(__name__)


class ServiceParams(dict):
    """The call's service parameters (A2A 1.0 §3.2.6) from its headers, read
    case-insensitively, with A2A-Version defaulting to 1.0 on this binding."""

    def __init__(self, request: HttpRequest) -> None:
        super().__init__((k.lower(), v) for k, v in request.headers.items())
        self.setdefault("a2a-version", "1.0")

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


def error_response(error: ProtocolError) -> HttpResponse:
    """AIP-193: the HTTP status, its gRPC status name, the message and the details."""
    status = rest_status(error)
    body = {
        "error": {
            "code": status,
            "status": grpc_status(error),
            "message": error.text,
            "details": error.details(),
        }
    }
    response = _json(body, status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="taskdeck"'
        status_line.say(response, error.text)
    if status in (429, 503):
        response["Retry-After"] = str(error.data.get("retryAfter", 60))
    return response


def _json(body: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(
        json.dumps(body, separators=(",", ":")), status=status, content_type="application/json"
    )


def _no_route(path: str, exc: NoRoute) -> HttpResponse:
    if not exc.allowed:
        error = ProtocolError(INVALID_REQUEST, f"no HTTP+JSON route {path!r}", http_status=404)
        return error_response(error)
    error = ProtocolError(
        INVALID_REQUEST, f"{path!r} takes {', '.join(exc.allowed)}", http_status=405
    )
    response = error_response(error)
    response["Allow"] = ", ".join(exc.allowed)
    return response


def _body(request: HttpRequest) -> dict[str, Any]:
    http_bodies.check_size(request.headers)
    if not http_bodies.body_of(request):  # cancel, subscribe: POSTs that need no body may send none
        return {}
    if (err := http_bodies.content_type_error(request.headers, "the body")) is not None:
        raise err
    payload = http_bodies.json_of(http_bodies.body_of(request))
    if not isinstance(payload, dict):
        raise ProtocolError(INVALID_PARAMS, "the body must be a JSON object")
    return payload


def _params(route: Route, match, request: HttpRequest) -> dict[str, Any]:
    params = _body(request) if route.body else {}
    try:
        params.update(query_params(route, request.GET))
    except BadQuery as exc:
        raise invalid_params({exc.name: [exc.why]}) from None
    for key, value in route.params(match).items():
        if params.get(key, value) != value:  # the path names the resource
            raise invalid_params({key: [f"names another resource than the path ({value!r})"]})
        params[key] = value
    return params


def _decide(request: HttpRequest, path: str) -> HttpResponseBase | calls.Pending:
    """`_checked`, answering an AIP-193 JSON body whatever fails: an unreachable database
    is 503 UNAVAILABLE with Retry-After (docs/protocol.md, "During a database outage"),
    never Django's HTML error page; another failure 500 INTERNAL."""
    try:
        return _checked(request, path)
    except Exception as exc:
        if is_infrastructure(exc):
            discard_connections()  # this thread's: the next call reconnects
        return error_response(from_domain(exc) or _failed(exc))


def _failed(exc: BaseException) -> ProtocolError:
    log.error("an HTTP+JSON call failed", exc_info=exc)
    return ProtocolError(INTERNAL_ERROR, "the server could not complete this request")


def _checked(request: HttpRequest, path: str) -> HttpResponseBase | calls.Pending:
    try:
        principal = authenticate(request.headers.get("Authorization"))
    except Unauthenticated as exc:
        return error_response(ProtocolError(INVALID_REQUEST, str(exc), http_status=401))
    try:
        route, match = resolve(request.method or "GET", path)
    except NoRoute as exc:
        return _no_route(path, exc)
    try:
        params = _params(route, match, request)
    except ProtocolError as error:
        return error_response(error)
    outcome = calls.decide(
        route.method,
        params,
        principal,
        ServiceParams(request),
        base_url=agent_card.base_url(request),
    )
    if isinstance(outcome, calls.Pending):
        return outcome
    if isinstance(outcome, calls.Answer):
        return _json(outcome.value if outcome.value is not None else {})
    if isinstance(outcome, StreamPlan):
        return _sse(outcome)
    return error_response(outcome)


def _sse(plan: StreamPlan) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_frames(plan), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _error_event(error: ProtocolError) -> bytes:
    body = json.dumps({"error": json.loads(error_response(error).content)["error"]})
    return f"event: error\ndata: {body}\n\n".encode()


async def _frames(plan: StreamPlan):
    """The SSE body; it always ends: after the item that ends the stream, or with an
    `event: error` frame (a revoked key: 401; the database unreachable past
    TASKDECK_STREAM_OUTAGE_SECONDS: 503 UNAVAILABLE; any failure while following: 500)."""
    try:
        async with aclosing(follow(plan)) as items:
            async for got in items:
                if got == KEEPALIVE:
                    yield b": keepalive\n\n"
                elif got == REVOKED:
                    yield _error_event(
                        ProtocolError(
                            INVALID_REQUEST,
                            "the API key was revoked; the stream ends",
                            http_status=401,
                        )
                    )
                elif got == UNAVAILABLE:
                    yield _error_event(unavailable())
                else:
                    event_id, item = got
                    body = json.dumps(wire10.stream_event(item), separators=(",", ":"))
                    yield f"id: {event_id}\ndata: {body}\n\n".encode()
    except Exception:
        log.exception("the stream of task %s failed", plan.task_id)
        yield _error_event(
            ProtocolError(INTERNAL_ERROR, "the stream failed; reconnect with its last id")
        )


# without the health check's ping on a connection that answered a moment ago (a2a/db_faults.py)
_decide_in_thread = in_thread(_decide)


@csrf_exempt  # bearer keys only: no cookie is read on this binding
async def endpoint(request: HttpRequest, path: str) -> HttpResponseBase:
    decided = await _decide_in_thread(request, path)
    if not isinstance(decided, calls.Pending):
        return decided
    try:
        outcome = await calls.answer(decided)
    except Exception as exc:  # the wait itself failed: answer in JSON all the same
        outcome = from_domain(exc) or _failed(exc)
    if isinstance(outcome, ProtocolError):
        return error_response(outcome)
    return _json(outcome.value)
