"""One A2A call, whatever binding carried it: the checks every binding makes, then the method.

A binding (JSON-RPC, HTTP+JSON, gRPC) parses its own envelope, authenticates the caller and
names the method; `decide` does the rest the same way for all of them, in one order
(version, scope, storable params, the method's params, the handler: docs/protocol.md,
"The three A2A 1.0 bindings"), and answers one of:

- `Answer`: the result in the wire version of the method (1.0 methods answer 1.0 shapes);
- `ProtocolError`: the refusal (each binding renders it: a JSON-RPC error, an AIP-193
  body with its HTTP status, a gRPC status with the same details);
- `StreamPlan`: what to stream (`a2a.protocol.stream.follow` yields its items);
- `Pending`: a blocking send whose answer is read once its task settles (`answer`).

`decide` runs in a worker thread (it reads and writes the database); `settled` does too.
`answer` runs in the event loop: it waits there for the task to settle (a2a.work: the
bindings never ask the agent runtime themselves), then reads the answer in one hop.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from a2a import conf, jsonsafe, work
from a2a.auth import Principal
from a2a.db_faults import in_thread
from a2a.fields import unbind
from a2a.lifecycle import Dialect
from a2a.models import TaskEvent
from a2a.prepared import Prepared

from . import dialects, wire10
from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    VERSION_NOT_SUPPORTED,
    ProtocolError,
    from_domain,
    invalid_params,
)
from .methods import METHODS, Call, _task_dict, stream_message
from .params import flatten_errors
from .stream import StreamPlan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    value: Any


@dataclass(frozen=True)
class Pending:
    """A blocking send: wait for `task_id` to settle (a2a.work), then `settled` (`answer`)."""

    name: str
    params: dict
    call: Call
    task_id: str


Decided = Answer | ProtocolError | StreamPlan | Pending


def version_error(headers: Mapping[str, str], method_version: str) -> ProtocolError | None:
    """A2A-Version negotiation as the a2a-sdk 1.x does it: no header means 0.3; 1.0
    methods need a 1.x header; an unknown major version is refused for any method."""
    header = (headers.get("A2A-Version") or "").strip()
    major = header.split(".", 1)[0] if header else "0"
    if major not in ("0", "1"):
        return ProtocolError(VERSION_NOT_SUPPORTED, f"A2A version {header!r} is not supported")
    if method_version == "1.0" and major != "1":
        return ProtocolError(
            VERSION_NOT_SUPPORTED,
            f"A2A version {header or '0.3'!r} cannot call a 1.0 method: "
            "send the header A2A-Version: 1.0",
        )
    return None


def last_event_id(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("Last-Event-ID")
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):  # "²".isdigit() is True
        raise ProtocolError(INVALID_PARAMS, "the Last-Event-ID header must be an event id")
    return int(raw)


def blocking(name: str, params: dict) -> bool:
    """1.0 SendMessage waits for the agent unless returnImmediately; 0.3 message/send only
    when configuration.blocking is true."""
    config = params.get("configuration") if isinstance(params, dict) else None
    config = config if isinstance(config, dict) else {}
    if name == "SendMessage":
        return not (config.get("returnImmediately") or config.get("return_immediately"))
    return name == "message/send" and config.get("blocking") is True


def missing_scope(name: str, principal: Principal) -> ProtocolError | None:
    """403 when the caller's key lacks a scope the method needs."""
    missing = next((s for s in METHODS[name].scopes if s not in principal.scopes), None)
    if missing is None:
        return None
    return ProtocolError(
        INVALID_REQUEST,
        f"{name} needs an API key with the {missing!r} scope",
        {"requiredScope": missing},
        http_status=403,
    )


def decide(
    name: str,
    params: Any,
    principal: Principal,
    headers: Mapping[str, str],
    *,
    base_url: str = "",
    dialect: Dialect | None = None,
) -> Decided:
    """Check and run method `name` for `principal`; `headers` are the call's service
    parameters (A2A-Version, A2A-Extensions, Last-Event-ID), from HTTP headers or gRPC
    metadata; `base_url` is where the caller reached the web server (for cards)."""
    if name not in METHODS:
        return ProtocolError(METHOD_NOT_FOUND, f"no method {name!r}")
    method = METHODS[name]
    if (err := version_error(headers, method.version)) is not None:
        return err
    if (err := missing_scope(name, principal)) is not None:
        return err
    if not isinstance(params, dict):
        return ProtocolError(INVALID_PARAMS, "params must be an object")
    if (found := jsonsafe.problem(params)) is not None:
        # Valid JSON the database cannot store (NUL, a lone surrogate) or too deep to walk
        # safely: refused before any handler, so no method half-writes it.
        return invalid_params({found.path: [found.why]})
    if method.version == "1.0":
        try:
            params = wire10.params_to_03(name, params)
        except wire10.SpelledTwice as exc:
            return invalid_params({exc.key: [str(exc)]})
    try:
        cursor = last_event_id(headers)
    except ProtocolError as err:
        return err
    call = Call(
        principal=principal,
        dialect=dialect or dialects.choose(headers, params),  # a binding may fix it
        last_event_id=cursor,
        version=method.version,
        settle_first=blocking(name, params),
        base_url=(base_url or conf.TASKDECK.public_url or conf.TASKDECK.web_url or "").rstrip("/"),
    )
    # a blocking or streaming send waits for the run it starts: an inline agent's run is
    # then this process's (a2a.work.may_run_here); a send that returns at once leaves it queued
    if not (call.settle_first or method.handler is stream_message):
        outcome = run(name, params, call)
    else:
        with work.may_run_here():
            outcome = run(name, params, call)
    if isinstance(outcome, ProtocolError | StreamPlan):
        return outcome
    if call.settle_first and isinstance(outcome, dict) and "id" in outcome:
        return Pending(name, params, call, outcome["id"])
    return Answer(to_wire(name, call, outcome))


def to_wire(name: str, call: Call, result: Any) -> Any:
    method = METHODS[name]
    if call.version == "1.0" and method.to_10 is not None:
        return method.to_10(result)
    return result


def run(name: str, params: dict, call: Call) -> Any:
    """Validate the params and run the handler: its result, or a ProtocolError (`in_call`)."""
    outcome = _run(name, params, call)
    if isinstance(outcome, ProtocolError):
        outcome.in_call = True
    return outcome


def _run(name: str, params: dict, call: Call) -> Any:
    method = METHODS[name]
    serializer = method.params(data=params)
    try:
        if not serializer.is_valid():
            return invalid_params(flatten_errors(serializer.errors))
        validated = serializer.validated_data
    finally:
        unbind(serializer)  # freed now, not by the cyclic collector (a2a.fields.unbind)
    try:
        return method.handler(validated, call)
    except ProtocolError as err:  # a protocol matter the handler decided (no domain error)
        return err
    except Exception as exc:
        mapped = from_domain(exc, call.dialect)
        if mapped is not None:
            return mapped
        if isinstance(exc, serializers.ValidationError):
            return invalid_params(flatten_errors(exc.detail))
        log.exception("A2A %s failed", name)
        return ProtocolError(INTERNAL_ERROR, "the server could not complete this request")


# A blocking send's answer reads its task's last event: compiled once (a2a/prepared.py).
_LAST_EVENT_DATA = Prepared(
    lambda task: TaskEvent.objects.filter(task_id=task).order_by("-id").values_list("data")[:1],
    "task",
)


def settled(pending: Pending) -> Answer | ProtocolError:
    """A blocking send's answer once its task settled: the task again (with the history
    length asked for), or the agent's message when it answered with a message."""
    call, task_id = pending.call, pending.task_id
    history = (pending.params.get("configuration") or {}).get("historyLength")
    try:
        result = _task_dict(task_id, call, history)
        if result["status"]["state"] == "completed" and result["status"].get("message"):
            last = _LAST_EVENT_DATA.first(task=task_id)
            if last and last[0].get("replyOnly"):
                result = result["status"]["message"]
    except Exception as exc:
        return from_domain(exc, call.dialect) or ProtocolError(INTERNAL_ERROR, "read failed")
    return Answer(to_wire(pending.name, call, result))


_settled_in_thread = in_thread(settled)


async def answer(pending: Pending) -> Answer | ProtocolError:
    """In the event loop: a blocking send's answer. Waits for its task to settle (a2a.work,
    at most TASKDECK BLOCKING_SEND_SECONDS: then the task as it is), then reads the answer
    in one worker thread (`settled`)."""
    await work.until_settled(pending.task_id)
    return await _settled_in_thread(pending)
