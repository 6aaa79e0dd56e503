"""Messages ↔ the JSON the core speaks: a request's ProtoJSON is the JSON-RPC 1.0 params of
the method of the same name, and a method's 1.0 result parses into the response message.

Three differences between ProtoJSON and the JSON the JSON-RPC door reads and writes are
bridged here, not in the core:

- `google.protobuf.Struct` / `Value` numbers are doubles, so `{"durationMinutes": 30}`
  arrives as 30.0; an integral double is given back as an int (JSON does not tell them apart,
  and the core's strict integer fields would refuse 30.0).
- Taskdeck's paused states are not in `lf.a2a.v1.TaskState`. Its enums are open, so
  `status.state` carries the numbers of `taskdeck.pause.v1.PausedTaskState` (101, 102);
  parsing the 1.0 names would silently drop them. A ListTasks `status` filter may name them
  by number too.
- A result of `null` (DeleteTaskPushNotificationConfig) is `google.protobuf.Empty`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from a2a.protocol.errors import INVALID_PARAMS, ProtocolError

from .protos import pause_pb2

M = TypeVar("M", bound=Message)

PAUSED_NUMBERS: dict[str, int] = {
    name: number for name, number in pause_pb2.PausedTaskState.items() if number
}
PAUSED_NAMES: dict[int, str] = {number: name for name, number in PAUSED_NUMBERS.items()}


def integral(value: Any) -> Any:
    """Doubles that hold an integer as ints, all the way down."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def params_of(request: Message) -> dict[str, Any]:
    """The request as JSON-RPC 1.0 params (camelCase names, unset fields left out)."""
    try:
        params = json_format.MessageToDict(request)
    except (ValueError, json_format.Error) as exc:  # NaN or Infinity in a Struct
        raise ProtocolError(INVALID_PARAMS, f"the request has no JSON form: {exc}") from None
    params = integral(params)
    if isinstance(params.get("status"), int):  # ListTasks filtering by a paused state
        params["status"] = PAUSED_NAMES.get(params["status"], params["status"])
    return params


def _with_paused_numbers(value: Any) -> Any:
    """`status.state` of the tasks and status updates in `value` as numbers when paused."""
    if isinstance(value, list):
        return [_with_paused_numbers(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = dict(value)
    status = out.get("status")
    if isinstance(status, dict) and status.get("state") in PAUSED_NUMBERS:
        out["status"] = {**status, "state": PAUSED_NUMBERS[status["state"]]}
    for key in ("task", "tasks", "statusUpdate"):  # Task, SendMessage/List/StreamResponse
        if key in out:
            out[key] = _with_paused_numbers(out[key])
    return out


def message_of(value: Any, cls: type[M]) -> M:
    """A 1.0 result (or stream event) as `cls`. Keys the message does not have are dropped,
    as a ProtoJSON reader must (ignore_unknown_fields)."""
    if value is None:
        return cls()
    return json_format.ParseDict(_with_paused_numbers(value), cls(), ignore_unknown_fields=True)
