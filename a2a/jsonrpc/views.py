"""The JSON-RPC endpoint (POST /a2a/).

Order of checks, each with its own answer: authentication (HTTP 401), body size (413),
JSON (-32700), envelope (-32600), method (-32601), scope (HTTP 403), params (-32602), then
the handler, whose domain errors map to the codes of PROTOCOL.md §2. The view is async so
that streams and blocking sends wait in the event loop, not in a thread; the checks and
the handler run together in one worker thread per call (thread_sensitive=False), so
concurrent requests really are concurrent and the row locks in `a2a.services` decide who
wins.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import serializers

from a2a import jsonsafe
from a2a.auth import Principal, Unauthenticated, authenticate
from a2a.models import TaskEvent
from a2a.protocol import dialects, wire10
from a2a.protocol import stream as streaming
from a2a.protocol.methods import METHODS, Call
from a2a.protocol.params import flatten_errors
from a2a.runtime import settle

from . import sse
from .errors import (
    CONTENT_TYPE_NOT_SUPPORTED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    VERSION_NOT_SUPPORTED,
    JsonRpcError,
    from_domain,
    invalid_params,
)

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
    if status == 429:
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
    limit = settings.TASKDECK["MAX_REQUEST_BYTES"]
    if int(request.headers.get("Content-Length") or 0) > limit:
        raise JsonRpcError(INVALID_REQUEST, f"request body over {limit} bytes", http_status=413)
    try:
        payload = jsonsafe.loads(request.body)
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


def _version_error(request: HttpRequest, method_version: str) -> JsonRpcError | None:
    """A2A-Version negotiation as the a2a-sdk 1.x does it: no header means 0.3; 1.0
    methods need a 1.x header; an unknown major version is refused for any method."""
    header = (request.headers.get("A2A-Version") or "").strip()
    major = header.split(".", 1)[0] if header else "0"
    if major not in ("0", "1"):
        return JsonRpcError(VERSION_NOT_SUPPORTED, f"A2A version {header!r} is not supported")
    if method_version == "1.0" and major != "1":
        return JsonRpcError(
            VERSION_NOT_SUPPORTED,
            f"A2A version {header or '0.3'!r} cannot call a 1.0 method: "
            "send the header A2A-Version: 1.0",
        )
    return None


def _content_type_error(request: HttpRequest) -> JsonRpcError | None:
    content_type = (request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type and content_type != "application/json" and not content_type.endswith("+json"):
        return JsonRpcError(
            CONTENT_TYPE_NOT_SUPPORTED,
            f"send JSON-RPC as application/json, not {content_type}",
        )
    return None


def _blocking(name: str, params: dict) -> bool:
    """1.0 SendMessage waits for the agent unless returnImmediately; 0.3 message/send only
    when configuration.blocking is true."""
    config = params.get("configuration") if isinstance(params, dict) else None
    config = config if isinstance(config, dict) else {}
    if name == "SendMessage":
        return not (config.get("returnImmediately") or config.get("return_immediately"))
    return name == "message/send" and config.get("blocking") is True


def _sse(chunks) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def _one_event(frame: bytes):
    yield frame


@dataclass(frozen=True)
class _Blocking:
    """A blocking send whose task must settle before it is answered (in the event loop)."""

    rpc_id: Any
    name: str
    params: dict
    call: Call
    task_id: str


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
    if not isinstance(decided, _Blocking):
        return decided
    await settle.until_settled(decided.task_id)
    outcome = await _run_in_thread_reread(
        decided.name, decided.params, decided.call, decided.task_id
    )
    version = decided.call.version
    if isinstance(outcome, JsonRpcError):
        return _response(decided.rpc_id, error=outcome, version=version)
    to_10 = METHODS[decided.name].to_10
    if version == "1.0" and to_10 is not None:
        outcome = to_10(outcome)
    return _response(decided.rpc_id, result=outcome, version=version)


def _decide(request: HttpRequest) -> HttpResponseBase | _Blocking:
    """Authenticate, check and run the call: the answer, or what a blocking send waits
    for. One thread for all of it: each hop between the event loop and a thread costs
    about as much CPU as the checks themselves."""
    try:
        principal: Principal = authenticate(request.headers.get("Authorization"))
    except Unauthenticated as exc:
        return _response(None, error=JsonRpcError(INVALID_REQUEST, str(exc), http_status=401))
    if (err := _content_type_error(request)) is not None:
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
    if (err := _version_error(request, version)) is not None:
        return _response(rpc_id, error=err, version=version)
    missing = next((s for s in method.scopes if s not in principal.scopes), None)
    if missing is not None:
        return _response(
            rpc_id,
            error=JsonRpcError(
                INVALID_REQUEST,
                f"{name} needs an API key with the {missing!r} scope",
                {"requiredScope": missing},
                http_status=403,
            ),
            version=version,
        )
    params = payload.get("params") or {}
    if (found := jsonsafe.problem(params)) is not None:
        # Valid JSON the database cannot store (NUL, a lone surrogate) or too deep to walk
        # safely: refused before any handler, so no method half-writes it.
        return _response(rpc_id, error=invalid_params({found.path: [found.why]}), version=version)
    if version == "1.0":
        params = wire10.params_to_03(name, params)
    try:
        last_event_id = _last_event_id(request)
    except JsonRpcError as err:
        return _response(rpc_id, error=err, version=version)
    call = Call(
        principal=principal,
        dialect=dialects.choose(request.headers, params),
        last_event_id=last_event_id,
        version=version,
        settle_first=_blocking(name, params),
    )
    outcome = _run(name, params, call)
    if isinstance(outcome, JsonRpcError):
        if method.streaming and version == "0.3" and outcome.http_status == 200:
            # 0.3 clients read a stream method's answer as SSE, errors included (but a
            # 429 stays an HTTP answer: clients back off on the status and Retry-After)
            body = {"jsonrpc": "2.0", "id": rpc_id, "error": outcome.as_dict(version)}
            frame = f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
            return _sse(_one_event(frame))
        return _response(rpc_id, error=outcome, version=version)
    if isinstance(outcome, streaming.StreamPlan):
        wrap = wire10.stream_event if version == "1.0" else None
        return _sse(sse.stream(outcome, rpc_id, call.dialect, wrap=wrap))
    if call.settle_first and isinstance(outcome, dict) and "id" in outcome:
        return _Blocking(rpc_id, name, params, call, outcome["id"])
    if version == "1.0" and method.to_10 is not None:
        outcome = method.to_10(outcome)
    return _response(rpc_id, result=outcome, version=version)


_decide_in_thread = database_sync_to_async(_decide, thread_sensitive=False)


def _reread(name: str, params: dict, call: Call, task_id: str) -> Any:
    """The task again after a blocking send settled (same history length as asked), or
    the agent's message when it answered with a message rather than a task."""
    from a2a.protocol.methods import _task_dict

    history = (params.get("configuration") or {}).get("historyLength")
    try:
        result = _task_dict(task_id, call, history)
        if result["status"]["state"] == "completed" and result["status"].get("message"):
            last = TaskEvent.objects.filter(task_id=task_id).order_by("-id").first()
            if last is not None and last.data.get("replyOnly"):
                return result["status"]["message"]
        return result
    except Exception as exc:
        return from_domain(exc, call.dialect) or JsonRpcError(INTERNAL_ERROR, "read failed")


_run_in_thread_reread = database_sync_to_async(_reread, thread_sensitive=False)


def _last_event_id(request: HttpRequest) -> int | None:
    raw = request.headers.get("Last-Event-ID")
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):  # "²".isdigit() is True
        raise JsonRpcError(INVALID_PARAMS, "the Last-Event-ID header must be an event id")
    return int(raw)
