"""Every use Taskdeck makes of the ACP SDK's internals, in one place.

The official Python SDK (`agent-client-protocol`, import name `acp`) gives an agent or a
client typed methods for the standard protocol, and no public way to do what both the
ACP door (a2a/acp_door) and the ACP host (a2a/acp_host) must: send a method the SDK has
no model for (the seed's `session/suspend`, `session/await_resumption`, the seed's fields
of `session/resume`), put routes of their own on its router (so that `_meta` can never
override a typed parameter, and the seed's methods reach them), notice that a connection
closed, hear every message, and serve stdio with a transport of their own. Each function
here says which internal it relies on. The door, the host and the tests' peers import
this module for all of that, never the internals themselves (tests/test_acp_sdk.py
refuses it); public `acp` imports (`acp.schema`, `RequestError`, `run_agent`,
`spawn_agent_process`) stay where they are used.

Upgrading the SDK: tests/test_acp_sdk.py drives each function below over real SDK
connections; docs/upgrading.md says what to check when it fails. The version is pinned
exactly in pyproject.toml for that reason.

`conn` below is either end of a connection: the agent side's `AgentSideConnection` (the
door) or the client side's `ClientSideConnection` (the host).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any, Literal

# acp._transport.NdjsonTransport: the SDK's newline-delimited JSON transport over asyncio
# streams (`__init__(reader, sender)`, `send`, `receive`, `close`). The door subclasses it
# to answer every bad line (a2a/acp_door/transport.py); `run_agent` takes any object with
# the `acp._transport.Transport` shape (send/receive/close) in place of byte streams.
from acp._transport import NdjsonTransport
from acp.connection import Connection, StreamDirection, StreamEvent
from acp.router import MessageRouter, Route
from acp.stdio import _WritePipeProtocol
from acp.task import MessageSender, TaskSupervisor

__all__ = [
    "PINNED",
    "Kind",
    "NdjsonTransport",
    "add_route",
    "installed_version",
    "is_disconnected",
    "message_sender",
    "observe_incoming",
    "route_of",
    "send_notification",
    "send_request",
    "send_withdrawable_request",
    "stdio_write_protocol",
]

PINNED = "0.12.1"  # the version these internals were read from (pyproject.toml pins it)

Kind = Literal["request", "notification"]


def installed_version() -> str:
    """The installed SDK's version (for the guard test's messages)."""
    return version("agent-client-protocol")


def _connection(conn: Any) -> Connection:
    """The JSON-RPC connection inside an AgentSideConnection or ClientSideConnection.

    Relies on: the private attribute `_conn` of both wrappers (an `acp.connection.
    Connection`); the wrappers expose only the typed standard methods."""
    return conn._conn


async def send_request(conn: Any, method: str, params: Any = None) -> Any:
    """Send a JSON-RPC request by its method name and return the raw `result` (a dict, not
    a model): for the seed's methods, which the SDK has no model for, and for standard
    ones whose answer carries fields its models drop (the seed's capabilities at the root
    of `agentCapabilities`). Raises `acp.RequestError` for an error answer and
    `ConnectionError` once the connection is closed.

    Relies on: `Connection.send_request(method, params)` behind `_conn`."""
    return await _connection(conn).send_request(method, params)


async def send_withdrawable_request(conn: Any, method: str, params: Any = None) -> Any:
    """`send_request`, withdrawn when the caller is cancelled: the peer is told with ACP's
    `$/cancel_request {requestId}` (so an editor closes a permission dialog that another
    editor, or the dashboard, has answered) before the cancellation goes on.

    Relies on: `Connection._next_request_id`, the id `send_request` gives its next request
    (read just before it, on the same loop, with nothing awaited in between)."""
    c = _connection(conn)
    request_id = c._next_request_id
    try:
        return await c.send_request(method, params)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await c.send_notification("$/cancel_request", {"requestId": request_id})
        raise


async def send_notification(conn: Any, method: str, params: Any = None) -> None:
    """Send a JSON-RPC notification by its method name, its params as given (the SDK's
    typed `session_update` would validate them against its models, which do not know the
    seed's update kinds).

    Relies on: `Connection.send_notification(method, params)` behind `_conn`."""
    await _connection(conn).send_notification(method, params)


def _router(conn: Any) -> MessageRouter:
    """Relies on: `Connection._handler`, which the wrappers build with
    `build_agent_router` / `build_client_router`: an `acp.router.MessageRouter`."""
    router = _connection(conn)._handler
    if not isinstance(router, MessageRouter):  # an SDK that wraps its router differently
        raise TypeError(f"the ACP SDK's handler is a {type(router).__name__}, not its router")
    return router


def add_route(
    conn: Any, method: str, func: Callable[[Any], Awaitable[Any]], kind: Kind = "request"
) -> None:
    """Serve `method` with `func(params)`, `params` as they arrived (a dict, unvalidated),
    in place of the SDK's route for it, if any. A request's return value is its result
    (a pydantic model is dumped by alias); an `acp.RequestError` raised is its error.

    Relies on: `MessageRouter.add_route(Route(method, func, kind))` on the router behind
    `_conn._handler`, which replaces a route of the same method and kind."""
    _router(conn).add_route(Route(method=method, func=func, kind=kind))


def route_of(conn: Any, method: str, kind: Kind = "notification") -> Route | None:
    """The route serving `method` now (the SDK's own typed one, before `add_route`
    replaces it): its `handle(params)` validates the params with the SDK's models.

    Relies on: `MessageRouter._requests` / `MessageRouter._notifications` (dicts by
    method) behind `_conn._handler`."""
    router = _router(conn)
    table = router._requests if kind == "request" else router._notifications
    return table.get(method)


def is_disconnected(conn: Any) -> bool:
    """True once the connection's receive loop has ended (end of input, or input that
    broke it): every later request fails with ConnectionError.

    Relies on: the private flag `Connection._disconnected` behind `_conn`, set by its
    receive loop when the transport ends."""
    return bool(_connection(conn)._disconnected)


def observe_incoming(conn: Any, hear: Callable[[dict[str, Any]], None]) -> None:
    """Call `hear(message)` with every message that arrives on the connection (requests,
    notifications, answers alike), before it is handled: a sign of life.

    Relies on: `Connection.add_observer(observer)` behind `_conn`, whose observers get an
    `acp.connection.StreamEvent` (`direction`, `message`) for each message either way."""

    def observer(event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            hear(event.message)

    _connection(conn).add_observer(observer)


def stdio_write_protocol() -> asyncio.BaseProtocol:
    """A protocol for `loop.connect_write_pipe` whose writer drains with flow control, as
    the SDK's own stdio streams do (`asyncio.StreamWriter.drain` needs `_drain_helper`).
    Call it inside the running loop.

    Relies on: `acp.stdio._WritePipeProtocol`."""
    return _WritePipeProtocol()


def message_sender(writer: asyncio.StreamWriter, source: str) -> MessageSender:
    """The SDK's sender over `writer`: one message a line, written in order by one task,
    each `send` returning once its line is drained. `source` names its task in logs.

    Relies on: `acp.task.MessageSender(writer, supervisor)` and
    `acp.task.TaskSupervisor(source=...)` (not exported by `acp`)."""
    return MessageSender(writer, TaskSupervisor(source=source))
