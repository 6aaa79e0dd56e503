"""The JSON-RPC endpoint (POST /a2a/).

Order of checks, each with its own answer: authentication (HTTP 401), body size (413),
JSON (-32700), envelope (-32600), method (-32601), scope (HTTP 403), params (-32602), then
the handler, whose domain errors map to the codes of PROTOCOL.md §2. The view is async so
that streaming methods can be added beside it; handlers run in a worker thread each
(thread_sensitive=False), so concurrent requests really are concurrent and the row locks
in `a2a.services` decide who wins.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import serializers

from a2a.auth import Principal, Unauthenticated, authenticate

from . import dialects, streaming
from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JsonRpcError,
    from_domain,
    invalid_params,
)
from .methods import METHODS, Call
from .params import flatten_errors

log = logging.getLogger(__name__)


def _response(rpc_id: Any, *, result: Any = None, error: JsonRpcError | None = None):
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id}
    if error is not None:
        body["error"] = error.as_dict()
        status = error.http_status
    else:
        body["result"] = result
        status = 200
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="taskdeck"'
    return response


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _parse(request: HttpRequest) -> tuple[Any, dict[str, Any]]:
    """(id, envelope) or JsonRpcError."""
    limit = settings.TASKDECK["MAX_REQUEST_BYTES"]
    if int(request.headers.get("Content-Length") or 0) > limit:
        raise JsonRpcError(INVALID_REQUEST, f"request body over {limit} bytes", http_status=413)
    try:
        payload = json.loads(request.body, parse_constant=_no_constants)
    except (ValueError, UnicodeDecodeError) as exc:
        raise JsonRpcError(PARSE_ERROR, f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise JsonRpcError(PARSE_ERROR, "body is nested too deeply") from None
    if isinstance(payload, list):
        raise JsonRpcError(INVALID_REQUEST, "batch requests are not supported")
    if not isinstance(payload, dict):
        raise JsonRpcError(INVALID_REQUEST, "the request must be a JSON object")
    rpc_id = payload.get("id")
    if not _valid_id(rpc_id):
        raise JsonRpcError(INVALID_REQUEST, "id must be a string, a number or null")
    if payload.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"', {"id": rpc_id})
    if "id" not in payload:
        raise JsonRpcError(INVALID_REQUEST, "id is required (notifications are not supported)")
    if not isinstance(payload.get("method"), str):
        raise JsonRpcError(INVALID_REQUEST, "method must be a string", {"id": rpc_id})
    if "params" in payload and not isinstance(payload["params"], dict):
        raise JsonRpcError(INVALID_PARAMS, "params must be an object", {"id": rpc_id})
    return rpc_id, payload


def _run(method_name: str, params: dict, call: Call) -> Any:
    """Validate and execute in a worker thread; returns a result or a JsonRpcError."""
    method = METHODS[method_name]
    serializer = method.params(data=params)
    if not serializer.is_valid():
        return invalid_params(flatten_errors(serializer.errors))
    try:
        return method.handler(serializer.validated_data, call)
    except Exception as exc:
        mapped = from_domain(exc, call.dialect)
        if mapped is not None:
            return mapped
        if isinstance(exc, serializers.ValidationError):
            return invalid_params(flatten_errors(exc.detail))
        log.exception("JSON-RPC %s failed", method_name)
        return JsonRpcError(INTERNAL_ERROR, "the server could not complete this request")


_run_in_thread = database_sync_to_async(_run, thread_sensitive=False)
_authenticate = database_sync_to_async(authenticate, thread_sensitive=False)


@csrf_exempt
async def endpoint(request: HttpRequest):
    if request.method != "POST":
        response = JsonResponse(
            {"detail": "POST a JSON-RPC 2.0 request here; see /.well-known/agent-card.json"},
            status=405,
        )
        response["Allow"] = "POST"
        return response
    rpc_id: Any = None
    try:
        principal: Principal = await _authenticate(request.headers.get("Authorization"))
    except Unauthenticated as exc:
        return _response(None, error=JsonRpcError(INVALID_REQUEST, str(exc), http_status=401))
    try:
        rpc_id, payload = _parse(request)
    except JsonRpcError as err:
        return _response(err.data.pop("id", None), error=err)
    name = payload["method"]
    if name not in METHODS:
        return _response(rpc_id, error=JsonRpcError(METHOD_NOT_FOUND, f"no method {name!r}"))
    scope = METHODS[name].scope
    if scope not in principal.scopes:
        return _response(
            rpc_id,
            error=JsonRpcError(
                INVALID_REQUEST,
                f"{name} needs an API key with the {scope!r} scope",
                {"requiredScope": scope},
                http_status=403,
            ),
        )
    params = payload.get("params") or {}
    try:
        last_event_id = _last_event_id(request)
    except JsonRpcError as err:
        return _response(rpc_id, error=err)
    call = Call(
        principal=principal,
        dialect=dialects.choose(request.headers, params),
        last_event_id=last_event_id,
    )
    outcome = await _run_in_thread(name, params, call)
    if isinstance(outcome, JsonRpcError):
        return _response(rpc_id, error=outcome)
    if isinstance(outcome, streaming.StreamPlan):
        response = StreamingHttpResponse(
            streaming.stream(outcome, rpc_id, call.dialect), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
    return _response(rpc_id, result=outcome)


def _last_event_id(request: HttpRequest) -> int | None:
    raw = request.headers.get("Last-Event-ID")
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise JsonRpcError(INVALID_PARAMS, "the Last-Event-ID header must be an event id")
    return int(raw)
