"""The ACP SDK's internals that Taskdeck relies on still behave as a2a/acp_sdk.py says.

Each test drives one function of the adapter over real SDK objects (an agent-side and a
client-side connection over a socket pair, a real pipe for stdio), so an upgrade of
`agent-client-protocol` that removes or changes one of them fails here, naming it, before
the ACP door or host breaks in a subtler way. docs/upgrading.md says what to check.

And no module but the adapter touches those internals (the last tests).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.agent.connection import AgentSideConnection
from acp.client.connection import ClientSideConnection
from pydantic import ValidationError

from a2a import acp_sdk

ROOT = Path(__file__).resolve().parents[1]
UPGRADE = (
    f"agent-client-protocol {acp_sdk.installed_version()} (adapter written for "
    f"{acp_sdk.PINNED}): a2a/acp_sdk.py relies on an internal that changed; see "
    "docs/upgrading.md"
)
SECONDS = 10  # an answer over a local socket that takes longer is not coming


class Peer:
    """An agent or a client implementing nothing: every route a test needs, it adds."""


async def _streams(sock: socket.socket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(sock=sock)


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[Any, Any, asyncio.StreamWriter]]:
    """(agent side, client side, the agent side's socket writer) over a socket pair."""
    left, right = socket.socketpair()
    agent_reader, agent_writer = await _streams(left)
    client_reader, client_writer = await _streams(right)
    agent = AgentSideConnection(Peer(), agent_writer, agent_reader, use_unstable_protocol=True)
    client = ClientSideConnection(Peer(), client_writer, client_reader, use_unstable_protocol=True)
    try:
        yield agent, client, agent_writer
    finally:
        await _close(agent, client, agent_writer, client_writer)


async def _close(*ends: Any) -> None:
    for end in ends:
        with contextlib.suppress(ConnectionError):  # a test hung up on purpose
            result = end.close()
            if asyncio.iscoroutine(result):
                await result


def _answer(coro: Any) -> Any:
    return asyncio.wait_for(coro, SECONDS)


@pytest.mark.asyncio
async def test_the_internals_the_adapter_reads_are_where_it_reads_them():
    """Named one by one, so that a rename fails here with its name rather than as an
    AttributeError deep in a behaviour test."""
    from acp.connection import Connection, StreamDirection, StreamEvent
    from acp.router import MessageRouter, Route
    from acp.stdio import _WritePipeProtocol
    from acp.task import MessageSender

    async with connected() as (agent, client, _):
        for end in (agent, client):
            inner = getattr(end, "_conn", None)
            assert isinstance(inner, Connection), f"{type(end).__name__}._conn: {UPGRADE}"
            assert isinstance(inner._handler, MessageRouter), f"Connection._handler: {UPGRADE}"
            assert inner._disconnected is False, f"Connection._disconnected: {UPGRADE}"
            router = inner._handler
            assert isinstance(router._requests, dict), f"MessageRouter._requests: {UPGRADE}"
            assert isinstance(router._notifications, dict), UPGRADE
    for name, params in (
        (Connection.send_request, ["self", "method", "params"]),
        (Connection.send_notification, ["self", "method", "params"]),
        (Connection.add_observer, ["self", "observer"]),
        (MessageRouter.add_route, ["self", "route"]),
        (acp_sdk.NdjsonTransport.__init__, ["self", "reader", "sender", "receive_timeout"]),
        (MessageSender.__init__, ["self", "writer", "supervisor"]),
    ):
        assert list(inspect.signature(name).parameters) == params, f"{name}: {UPGRADE}"
    assert {"method", "func", "kind"} <= set(inspect.signature(Route).parameters), UPGRADE
    assert {"direction", "message"} <= set(StreamEvent.__slots__), UPGRADE
    assert StreamDirection.INCOMING.value == "incoming", UPGRADE
    for hook in ("pause_writing", "resume_writing", "_drain_helper"):
        assert callable(getattr(_WritePipeProtocol, hook, None)), f"{hook}: {UPGRADE}"


@pytest.mark.asyncio
async def test_a_route_of_ours_gets_raw_params_and_answers_raw_results():
    """add_route + send_request: a method the SDK has no model for, and a standard one
    replaced, both get the params as sent (`_meta` untouched) and answer a plain dict."""
    async with connected() as (agent, client, _):
        heard: list[Any] = []

        async def echo(params: Any) -> Any:
            heard.append(params)
            return {"echo": params, "extra": "kept"}

        acp_sdk.add_route(agent, "session/suspend", echo, "request")
        acp_sdk.add_route(agent, "initialize", echo, "request")
        sent = {"sessionId": "s1", "mode": "finish_step", "_meta": {"mode": "not this"}}
        assert await _answer(acp_sdk.send_request(client, "session/suspend", sent)) == {
            "echo": sent,
            "extra": "kept",
        }, UPGRADE
        init = {"protocolVersion": 1, "_meta": {"protocolVersion": 99}}
        answer = await _answer(acp_sdk.send_request(client, "initialize", init))
        assert answer == {"echo": init, "extra": "kept"}, UPGRADE
        assert heard == [sent, init], UPGRADE


@pytest.mark.asyncio
async def test_a_request_error_raised_in_our_route_reaches_the_caller_as_one():
    async with connected() as (agent, client, _):

        async def refuse(params: Any) -> Any:
            raise RequestError(-32011, "cannot park now", {"why": "test"})

        acp_sdk.add_route(agent, "session/await_resumption", refuse, "request")
        with pytest.raises(RequestError) as caught:
            await _answer(acp_sdk.send_request(client, "session/await_resumption", {}))
        assert (caught.value.code, caught.value.data) == (-32011, {"why": "test"}), UPGRADE


@pytest.mark.asyncio
async def test_a_withdrawn_request_tells_the_peer_its_id():
    """send_withdrawable_request: cancelling the caller sends `$/cancel_request` with the
    id the request went out with (read from the connection's next id)."""
    async with connected() as (agent, client, _):
        asked: asyncio.Future = asyncio.get_running_loop().create_future()
        withdrawn: asyncio.Future = asyncio.get_running_loop().create_future()
        acp_sdk.observe_incoming(
            client,
            lambda m: (
                asked.set_result(m["id"])
                if m.get("method") == "x/ask"
                else withdrawn.set_result(m["params"])
                if m.get("method") == "$/cancel_request"
                else None
            ),
        )

        async def hang(params: Any) -> Any:
            await asyncio.Event().wait()

        acp_sdk.add_route(client, "x/ask", hang, "request")
        waiting = asyncio.ensure_future(acp_sdk.send_withdrawable_request(agent, "x/ask", {}))
        request_id = await _answer(asked)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await _answer(withdrawn) == {"requestId": request_id}, UPGRADE


@pytest.mark.asyncio
async def test_a_notification_goes_out_unvalidated_and_reaches_a_notification_route():
    """send_notification carries an update kind the SDK's models do not know (the seed's)."""
    async with connected() as (agent, client, _):
        got: asyncio.Future = asyncio.get_running_loop().create_future()

        async def on_update(params: Any) -> None:
            got.set_result(params)

        acp_sdk.add_route(client, "session/update", on_update, "notification")
        params = {"sessionId": "s1", "update": {"sessionUpdate": "taskdeck_suspended"}}
        await _answer(acp_sdk.send_notification(agent, "session/update", params))
        assert await _answer(got) == params, UPGRADE


@pytest.mark.asyncio
async def test_route_of_gives_the_sdks_typed_route_which_validates():
    async with connected() as (_, client, _):
        typed = acp_sdk.route_of(client, "session/update", "notification")
        assert typed is not None and typed.kind == "notification", UPGRADE
        with pytest.raises(ValidationError):
            await typed.handle({"sessionId": "s1", "update": {"sessionUpdate": "nonsense"}})

        async def ours(params: Any) -> None:
            return None

        acp_sdk.add_route(client, "session/update", ours, "notification")
        assert acp_sdk.route_of(client, "session/update", "notification").func is ours, UPGRADE
        assert acp_sdk.route_of(client, "session/prompt", "request") is None, UPGRADE


@pytest.mark.asyncio
async def test_every_incoming_message_is_heard_and_no_outgoing_one():
    async with connected() as (agent, client, _):
        heard: list[dict[str, Any]] = []
        acp_sdk.observe_incoming(client, heard.append)

        async def answer(params: Any) -> Any:
            return {"ok": True}

        acp_sdk.add_route(agent, "x/ping", answer, "request")
        await _answer(acp_sdk.send_request(client, "x/ping", {"n": 1}))
        assert [m.get("result") for m in heard] == [{"ok": True}], UPGRADE


@pytest.mark.asyncio
async def test_a_connection_whose_peer_hung_up_says_so_and_fails_what_is_in_flight():
    async with connected() as (agent, client, agent_socket):
        never = asyncio.Event()

        async def hang(params: Any) -> Any:
            await never.wait()

        acp_sdk.add_route(agent, "x/hang", hang, "request")
        assert not acp_sdk.is_disconnected(client), UPGRADE
        in_flight = asyncio.ensure_future(acp_sdk.send_request(client, "x/hang", {}))
        agent_socket.close()  # the agent's end goes away: EOF on the client's side
        with pytest.raises(ConnectionError):
            await _answer(in_flight)
        assert acp_sdk.is_disconnected(client), UPGRADE
        with pytest.raises(ConnectionError):
            await _answer(acp_sdk.send_request(client, "x/hang", {}))


@pytest.mark.asyncio
async def test_the_stdio_write_protocol_and_sender_write_lines_with_flow_control():
    """What the door's stdout is made of (a2a/acp_door/transport.py): a pipe, the SDK's
    write protocol (drain waits while the pipe is paused), and its message sender."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    protocol = acp_sdk.stdio_write_protocol()
    pipe = os.fdopen(write_fd, "wb", buffering=0)
    transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    try:
        protocol.pause_writing()
        drained = asyncio.ensure_future(writer.drain())
        for _ in range(3):
            await asyncio.sleep(0)  # let it run: it must still wait, the pipe is paused
        assert not drained.done(), UPGRADE
        protocol.resume_writing()
        await _answer(drained)

        sender = acp_sdk.message_sender(writer, source="test")
        await _answer(sender.send({"jsonrpc": "2.0", "method": "x", "params": {"é": 1}}))
        await _answer(sender.close())
        line = os.read(read_fd, 1000)
        assert line.endswith(b"\n") and json.loads(line) == {
            "jsonrpc": "2.0",
            "method": "x",
            "params": {"é": 1},
        }, UPGRADE
    finally:
        transport.close()
        os.close(read_fd)


@pytest.mark.asyncio
async def test_an_agent_connection_runs_over_a_transport_built_on_ndjson_transport():
    """The door hands `run_agent` a subclass of NdjsonTransport (reader, sender) in place
    of byte streams; the SDK serves over it."""

    class Counting(acp_sdk.NdjsonTransport):
        received = 0

        async def receive(self) -> dict[str, Any] | None:
            message = await super().receive()
            Counting.received += 1
            return message

    left, right = socket.socketpair()
    agent_reader, agent_writer = await _streams(left)
    client_reader, client_writer = await _streams(right)
    transport = Counting(agent_reader, acp_sdk.message_sender(agent_writer, source="test"))
    agent = AgentSideConnection(Peer(), transport, use_unstable_protocol=True)
    client = ClientSideConnection(Peer(), client_writer, client_reader)
    try:

        async def answer(params: Any) -> Any:
            return {"ok": params}

        acp_sdk.add_route(agent, "x/ping", answer, "request")
        assert await _answer(acp_sdk.send_request(client, "x/ping", {"n": 2})) == {
            "ok": {"n": 2}
        }, UPGRADE
        assert Counting.received == 1, UPGRADE
    finally:
        await _close(agent, client, agent_writer, client_writer)


# ----- nobody else touches them ------------------------------------------------------------

ADAPTER = ROOT / "a2a" / "acp_sdk.py"
# SDK modules with no public API for us (the adapter wraps what we need of them)
INTERNAL_MODULES = {"acp.router", "acp.task", "acp.connection", "acp.stdio", "acp.transports"}
# private attributes of the SDK's connection, router, transport and sender
PRIVATE_ATTRIBUTES = {
    "_conn",
    "_handler",
    "_disconnected",
    "_observers",
    "_requests",
    "_notifications",
    "_transport",
    "_reader",
    "_sender",
    "_writer",
    "_pending",
}


def _python_files() -> list[Path]:
    found = []
    for top in ("a2a", "agui", "dashboard", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" in path.parts or "generated" in path.parts or path == ADAPTER:
                continue
            found.append(path)
    return found


def _sdk_internals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    wrong: list[str] = []
    uses_sdk = "acp_door" in path.parts or "acp_host" in path.parts
    for node in ast.walk(tree):
        names: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.Import):
            names = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [(node.module, [a.name for a in node.names])]
        for module, imported in names:
            if module == "acp" or module.startswith("acp.") or module == "a2a.acp_sdk":
                uses_sdk = True
            if module != "acp" and not module.startswith("acp."):
                continue
            private = any(part.startswith("_") for part in module.split("."))
            if private or module in INTERNAL_MODULES or any(n.startswith("_") for n in imported):
                wrong.append(f"line {node.lineno}: imports {module} {imported or ''}".rstrip())
    if uses_sdk:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
                wrong.append(f"line {node.lineno}: .{node.attr}")
    return wrong


def test_only_the_adapter_touches_the_sdks_internals():
    """The door, the host and the tests' peers reach the SDK's internals through
    a2a/acp_sdk.py only: an upgrade has one module to re-read."""
    wrong = {
        str(path.relative_to(ROOT)): found
        for path in _python_files()
        if path != Path(__file__).resolve() and (found := _sdk_internals(path))
    }
    assert not wrong, "use a2a.acp_sdk instead:\n" + "\n".join(
        f"{where}: {', '.join(found)}" for where, found in wrong.items()
    )


def test_the_scan_sees_a_private_touch(tmp_path):
    """The scan above is not blind: each kind of touch it refuses is found in a probe."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from acp._transport import NdjsonTransport\n"
        "from acp.stdio import _WritePipeProtocol\n"
        "from acp.router import Route\n"
        "import acp\n"
        "def f(conn):\n"
        "    return conn._conn._handler\n"
    )
    found = _sdk_internals(probe)
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 3", "line 6", "line 6"]
