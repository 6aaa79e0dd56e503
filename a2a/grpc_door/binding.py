"""Each RPC of the served services as a call of the core, named by the RPC: A2A 1.0 and its
JSON-RPC binding use the same method names (SendMessage, GetTask, …, PauseTask), so the
method handlers are built from the service descriptors and nothing here lists methods. A
method the core does not have (the push app not installed) is `decide`'s METHOD_NOT_FOUND:
UNIMPLEMENTED.

Request bytes that are not the RPC's message are INVALID_ARGUMENT (as -32700 on JSON-RPC),
after authentication like every refusal: the handlers get them parsed by `lenient`, not by
the generated code's `FromString`, whose DecodeError grpc.aio would answer UNKNOWN with
the exception's class and text.

A call: its metadata become service parameters; one worker thread authenticates the
caller (`authorization`, as the JSON-RPC door's header), turns the request into its
ProtoJSON params and lets `a2a.protocol.calls.decide` check and run it (one thread hop,
thread_sensitive=False, so calls really run side by side and row locks decide who wins);
the event loop then waits where a call waits: for a blocking send's task to settle, or on
a stream's items (`a2a.protocol.stream.follow`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import grpc
from channels.db import database_sync_to_async
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message

from a2a.auth import Unauthenticated, authenticate
from a2a.lifecycle import Dialect
from a2a.protocol import calls, wire10
from a2a.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    ProtocolError,
    unavailable,
)
from a2a.protocol.stream import KEEPALIVE, REVOKED, UNAVAILABLE, StreamPlan, follow

from . import protojson
from .metadata import ServiceParameters
from .status import abort

log = logging.getLogger(__name__)

FAILED = ProtocolError(INTERNAL_ERROR, "the server could not complete this request")
KEY_REVOKED = ProtocolError(
    INVALID_REQUEST, "the API key was revoked; the stream ends", http_status=401
)


class Undecodable:
    """What `lenient` hands the handler for bytes that are not the RPC's message."""

    __slots__ = ("message_name",)

    def __init__(self, message_name: str) -> None:
        self.message_name = message_name


def lenient(message: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    """The request deserializer: the parsed message, or Undecodable (a deserializer that
    raises makes grpc.aio answer UNKNOWN, naming the exception)."""

    def parse(raw: bytes) -> Message | Undecodable:
        try:
            return message.FromString(raw)
        except DecodeError:
            return Undecodable(message.DESCRIPTOR.full_name)

    return parse


def decide(name: str, request: Message | Undecodable, headers: ServiceParameters) -> calls.Decided:
    """In a worker thread: who is calling (UNAUTHENTICATED when nobody), whether the
    request parsed (INVALID_ARGUMENT), the params, then the core's decision."""
    try:
        principal = authenticate(headers.get("authorization"))
    except Unauthenticated as exc:
        return ProtocolError(INVALID_REQUEST, str(exc), http_status=401)
    if isinstance(request, Undecodable):
        return ProtocolError(
            PARSE_ERROR, f"the request's bytes are not a protobuf {request.message_name}"
        )
    try:
        params = protojson.params_of(request)
    except ProtocolError as err:
        return err
    # the RFC dialect always: Bindu's pause results are task-shaped and fit none of the
    # pause service's typed messages (a Bindu pause would answer an empty message)
    return calls.decide(name, params, principal, headers, dialect=Dialect.RFC)


_decide_in_thread = database_sync_to_async(decide, thread_sensitive=False)


def unary(name: str, response: type[Message]) -> Callable[..., Any]:
    async def handle(request: Message, context: grpc.aio.ServicerContext) -> Message:
        headers = ServiceParameters(context.invocation_metadata())
        try:
            decided = await _decide_in_thread(name, request, headers)
            if isinstance(decided, calls.Pending):
                decided = await calls.answer(decided)
            if isinstance(decided, calls.Answer):
                return protojson.message_of(decided.value, response)
        except Exception:
            log.exception("gRPC %s failed", name)
            decided = FAILED
        await abort(context, decided if isinstance(decided, ProtocolError) else FAILED)

    return handle


def server_streaming(name: str, response: type[Message]) -> Callable[..., Any]:
    async def handle(request: Message, context: grpc.aio.ServicerContext) -> AsyncIterator[Message]:
        headers = ServiceParameters(context.invocation_metadata())
        try:
            decided = await _decide_in_thread(name, request, headers)
        except Exception:
            log.exception("gRPC %s failed", name)
            decided = FAILED
        if not isinstance(decided, StreamPlan):
            await abort(context, decided if isinstance(decided, ProtocolError) else FAILED)
        # aclosing: a client that goes away (or an abort) leaves the task's group at once.
        # An error while following (the database, Redis) is logged and answered INTERNAL:
        # grpc.aio would otherwise send the exception's own text to the client.
        try:
            async with aclosing(follow(decided)) as items:
                async for got in items:
                    if got == KEEPALIVE:  # HTTP/2 keeps the connection; nothing to send
                        continue
                    if got == REVOKED:
                        await abort(context, KEY_REVOKED)
                    if got == UNAVAILABLE:  # the database stayed down: UNAVAILABLE
                        await abort(context, unavailable())
                    _, item = got
                    yield protojson.message_of(wire10.stream_event(item), response)
        except grpc.aio.AbortError:
            raise
        except Exception:
            log.exception("gRPC %s: the stream failed", name)
            await abort(context, FAILED)

    return handle


def method_handlers(service: ServiceDescriptor) -> dict[str, grpc.RpcMethodHandler]:
    """Every RPC of `service`, by name, as grpc's method handler: the core's call, the
    request parsed by `lenient`, the response serialized as the generated code does."""
    out = {}
    for method in service.methods:
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        if method.server_streaming:
            make, kind = server_streaming, grpc.unary_stream_rpc_method_handler
        else:
            make, kind = unary, grpc.unary_unary_rpc_method_handler
        out[method.name] = kind(
            make(method.name, response),
            request_deserializer=lenient(request),
            response_serializer=response.SerializeToString,
        )
    return out
