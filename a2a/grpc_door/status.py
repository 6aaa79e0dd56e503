"""A refusal as a gRPC status: A2A 1.0 §5.4's code for the error (`errors.grpc_status`), its
one-line text as the message, and the same details the other bindings carry (a
google.rpc.ErrorInfo, plus a google.rpc.BadRequest for bad params) in a google.rpc.Status
sent as the `grpc-status-details-bin` trailer, where gRPC clients look for them
(`grpc_status.rpc_status.from_call`)."""

from __future__ import annotations

from typing import NoReturn

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from a2a.protocol.errors import ProtocolError, grpc_status

# The detail types ErrorInfo / BadRequest must be known to the descriptor pool for their
# "@type" to parse into google.protobuf.Any.
_DETAIL_TYPES = (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)


def status_of(error: ProtocolError) -> grpc.Status:
    code = grpc.StatusCode[grpc_status(error)]
    body = {"code": code.value[0], "message": error.text, "details": error.details()}
    return rpc_status.to_status(json_format.ParseDict(body, status_pb2.Status()))


async def abort(context: grpc.aio.ServicerContext, error: ProtocolError) -> NoReturn:
    """End the call with `error` (raises, as grpc.aio's abort does)."""
    status = status_of(error)
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("unreachable: abort raises")  # pragma: no cover
