"""The JSON-RPC endpoint (POST /a2a/).

Order of checks, each with its own answer: authentication (HTTP 401), body size (413),
JSON (-32700), envelope (-32600), method (-32601), then what every binding checks alike
(`a2a.protocol.calls.decide`: version, scope (HTTP 403), params (-32602), the handler,
whose domain errors map to the codes of docs/design/a2a-surface.md, D24). The view is
async so that streams and blocking sends wait in the event loop, not in a thread; the
checks and the handler run together in one worker thread per call
(thread_sensitive=False), so concurrent requests really are concurrent and the row locks
in `a2a.services` decide who wins.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from a2a.auth import Principal, Unauthenticated, authenticate
from a2a.db_faults import discard_connections, in_thread, is_infrastructure
from a2a.protocol import agent_card, calls, http_bodies, status_line, wire10
from a2a.protocol import stream as streaming
from a2a.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    from_domain,
)
from a2a.protocol.errors import ProtocolError as JsonRpcError
from a2a.protocol.methods import METHODS

from . import sse

log = logging.getLogger(__name__)


def _response(
    rpc_id: Any, *, result: Any = None, error: JsonRpcError | None = None, version: str = "0.3"
):
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id}
    if error is not None:
        body["error"] = error.as_dict(version)
        status = error.http_status
    else:
        body["result"] = result
        status = 200
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="taskdeck"'
        status_line.say(response, error.text)  # what the SDK's JSON-RPC client shows
    if status in (429, 503):
        response["Retry-After"] = str(error.data.get("retryAfter", 60))
    return response


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def _parse(request: HttpRequest) -> tuple[Any, dict[str, Any]]:
    """(id, envelope) or JsonRpcError."""
    http_bodies.check_size(request.headers)
    payload = http_bodies.json_of(http_bodies.body_of(request))
    if isinstance(payload, list):
        raise JsonRpcError(INVALID_REQUEST, "batch requests are not supported")
    if not isinstance(payload, dict):
        raise JsonRpcError(INVALID_REQUEST, "the request must be a JSON object")
    rpc_id = payload.get("id")
    if not _valid_id(rpc_id):
        raise JsonRpcError(INVALID_REQUEST, "id must be a string, a number or null")
    if payload.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"', {"id": rpc_id})
    if not isinstance(payload.get("method"), str):
        raise JsonRpcError(INVALID_REQUEST, "method must be a string", {"id": rpc_id})
    if "params" in payload and not isinstance(payload["params"], dict):
        raise JsonRpcError(INVALID_PARAMS, "params must be an object", {"id": rpc_id})
    return rpc_id, payload


def _sse(chunks) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def _one_event(frame: bytes):
    yield frame


@csrf_exempt
async def endpoint(request: HttpRequest):
    """One worker thread decides the answer (`_decide`); only a blocking send comes back
    to wait, in the event loop, for its task to settle."""
    if request.method != "POST":
        response = JsonResponse(
            {"detail": "POST a JSON-RPC 2.0 request here; see /.well-known/agent-card.json"},
            status=405,
        )
        response["Allow"] = "POST"
        return response
    decided = await _decide_in_thread(request)
    if not isinstance(decided, tuple):
        return decided
    rpc_id, pending = decided
    try:
        outcome = await calls.answer(pending)
    except Exception as exc:  # the wait itself failed: answer in JSON-RPC all the same
        outcome = from_domain(exc) or _failed(exc)
    version = pending.call.version
    if isinstance(outcome, JsonRpcError):
        return _response(rpc_id, error=outcome, version=version)
    return _response(rpc_id, result=outcome.value, version=version)


def _failed(exc: BaseException) -> JsonRpcError:
    log.error("a JSON-RPC call failed", exc_info=exc)
    return JsonRpcError(INTERNAL_ERROR, "the server could not complete this request")


def _decide(request: HttpRequest) -> HttpResponseBase | tuple[Any, calls.Pending]:
    """`_checked`, answering in JSON-RPC whatever fails: an unreachable database is -32603
    with HTTP 503 and Retry-After (docs/protocol.md, "During a database outage"), never
    Django's HTML error page; another failure -32603 with HTTP 500."""
    try:
        return _checked(request)
    except Exception as exc:
        if is_infrastructure(exc):
            discard_connections()  # this thread's: the next call reconnects
        return _response(None, error=from_domain(exc) or _failed(exc))


def _checked(request: HttpRequest) -> HttpResponseBase | tuple[Any, calls.Pending]:
    """Authenticate, parse and decide the call: the answer, or what a blocking send waits
    for. One thread for all of it: each hop between the event loop and a thread costs
    about as much CPU as the checks themselves."""
    try:
        principal: Principal = authenticate(request.headers.get("Authorization"))
    except Unauthenticated as exc:
        return _response(None, error=JsonRpcError(INVALID_REQUEST, str(exc), http_status=401))
    if (err := http_bodies.content_type_error(request.headers, "JSON-RPC")) is not None:
        return _response(None, error=err)
    try:
        rpc_id, payload = _parse(request)
    except JsonRpcError as err:
        return _response(err.data.pop("id", None), error=err)
    name = payload["method"]
    if name not in METHODS:
        return _response(rpc_id, error=JsonRpcError(METHOD_NOT_FOUND, f"no method {name!r}"))
    method = METHODS[name]
    version = method.version
    outcome = calls.decide(
        name,
        payload.get("params") or {},
        principal,
        request.headers,
        base_url=agent_card.base_url(request),
    )
    if isinstance(outcome, calls.Pending):
        return rpc_id, outcome
    if isinstance(outcome, calls.Answer):
        return _response(rpc_id, result=outcome.value, version=version)
    if isinstance(outcome, streaming.StreamPlan):
        wrap = wire10.stream_event if version == "1.0" else None
        return _sse(sse.stream(outcome, rpc_id, wrap=wrap, version=version))
    if method.streaming and version == "0.3" and outcome.in_call and outcome.http_status == 200:
        # 0.3 clients read a stream method's answer as SSE, errors included (but a
        # 429 stays an HTTP answer: clients back off on the status and Retry-After)
        body = {"jsonrpc": "2.0", "id": rpc_id, "error": outcome.as_dict(version)}
        frame = f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
        return _sse(_one_event(frame))
    return _response(rpc_id, error=outcome, version=version)


# without the health check's ping on a connection that answered a moment ago (a2a/db_faults.py)
_decide_in_thread = in_thread(_decide)
