"""The remote door's own promises (issue 30, item 4), beyond the door tests that run on
either transport (`@DOORS` in test_door.py, test_wire.py, test_commands.py and the runtime
flows: the remote door in the PostgreSQL lane, tests/acp_door/conftest.py): the relay
needs nothing of Taskdeck, and every way it can fail — a refused key, a server that is
not there, a bad URL — is one clear line on stderr, a JSON-RPC error for the request the
editor sent, and a non-zero exit. The socket's own contract (4401 with its reason, the
open rate) is checked with a plain WebSocket client."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tomllib

import httpx
import pytest
from acp import schema as s
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from a2a.acp_door.models import AcpSession
from a2a.acp_door.remote import SOCKET_MESSAGE_BYTES, SocketTransport
from tests.acp_door.conftest import relay_command, relay_env

pytestmark = pytest.mark.django_db(transaction=True)
PROJECT = ("a2a", "agui", "dashboard", "django", "channels", "acp", "pydantic", "tests")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def relay_once(command: list[str], env: dict[str, str], cwd, *lines: dict) -> tuple:
    """Run the relay as an editor does: send `lines`, read until each request is answered
    or the relay exits, then close stdin. (exit status, stdout messages, stderr text)."""
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    owed = {line["id"] for line in lines if "id" in line}
    out: list[dict] = []
    try:
        for line in lines:
            proc.stdin.write(json.dumps(line).encode() + b"\n")
        proc.stdin.flush()
        while owed and (raw := proc.stdout.readline()):  # "" once the relay exits
            out.append(json.loads(raw))  # every stdout line is a protocol message
            owed.discard(out[-1].get("id") if "method" not in out[-1] else None)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # it exited before reading everything
    out += [json.loads(raw) for raw in proc.stdout.read().splitlines()]
    proc.wait(timeout=60)
    return proc.returncode, out, proc.stderr.read().decode()


def one_line(err: str) -> str:
    """What the relay said on stderr, which must be one line: no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_the_relay_imports_nothing_of_taskdeck_nor_needs_its_settings(
    relay_file, acp_servers, acp_key
):
    """Run as an editor runs it — from a directory holding only the relay, with no
    DATABASE_URL, REDIS_URL, DJANGO_* or TASKDECK_* but the key — it answers `initialize`
    and `session/list`, and Python's import log shows no module of the project, Django,
    Channels or the ACP SDK (the virtualenv it runs in has them all)."""
    env = relay_env(acp_key)
    assert not [k for k in env if k.startswith(("DATABASE_URL", "REDIS_URL", "DJANGO_"))]
    assert [k for k in env if k.startswith("TASKDECK_")] == ["TASKDECK_API_KEY"]
    assert sorted(p.name for p in relay_file.parent.iterdir()) == ["taskdeck-acp.py"]
    cannot = subprocess.run(
        [sys.executable, "-c", "import a2a"], env=env, cwd=relay_file.parent, capture_output=True
    )
    assert cannot.returncode != 0 and b"No module named 'a2a'" in cannot.stderr
    command = [sys.executable, "-X", "importtime", *relay_command(relay_file, acp_servers())[1:]]
    listing = {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}
    status, out, err = relay_once(command, env, relay_file.parent, INITIALIZE, listing)
    assert status == 0, err[-2000:]
    answers = {m["id"]: m for m in out if "id" in m}
    assert answers[0]["result"]["agentInfo"]["name"] == "taskdeck"
    s.InitializeResponse.model_validate(answers[0]["result"])
    assert answers[1]["result"] == {"sessions": []}
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in err.splitlines()
        if line.startswith("import time:")
    }
    assert "websockets" in imported  # the log is the relay's
    assert not imported & set(PROJECT), sorted(imported & set(PROJECT))


def test_a_refused_key_is_said_once_answered_and_exits(relay_file, acp_servers, unchanged):
    with unchanged():
        status, out, err = relay_once(
            relay_command(relay_file, acp_servers()),
            relay_env("td_nope_not-a-key"),
            relay_file.parent,
            INITIALIZE,
        )
    assert status == 2
    line = one_line(err)
    assert "API key refused: unknown or revoked API key" in line and "TASKDECK_API_KEY" in line
    [answer] = out
    error = s.AgentErrorMessage.model_validate(answer).error
    assert (answer["id"], error.code) == (0, -32000)
    assert "API key refused" in error.data["detail"]
    assert error.message == "Authentication required: API key refused: unknown or revoked API key"


def test_a_server_that_is_not_there_is_said_and_answered(relay_file, acp_key):
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    status, out, err = relay_once(
        relay_command(relay_file, f"http://127.0.0.1:{port}"),
        relay_env(acp_key),
        relay_file.parent,
        INITIALIZE,
    )
    assert status == 1
    line = one_line(err)
    assert f"cannot reach the Taskdeck server at ws://127.0.0.1:{port}/acp/" in line, line
    [answer] = out
    assert s.AgentErrorMessage.model_validate(answer).error.code == -32603
    assert answer["id"] == 0 and "cannot reach" in answer["error"]["data"]["detail"]


def test_a_url_that_is_not_a_server_is_refused_before_anything(relay_file, acp_key):
    status, out, err = relay_once(
        relay_command(relay_file, "taskdeck.example:8000"),
        relay_env(acp_key),
        relay_file.parent,
        INITIALIZE,
    )
    assert (status, out) == (2, [])
    assert "--server must be an http(s):// or ws(s):// URL" in err


def test_an_editor_that_leaves_before_a_word_costs_nothing(relay_file, acp_servers, acp_key):
    status, out, err = relay_once(
        relay_command(relay_file, acp_servers()), relay_env(acp_key), relay_file.parent
    )
    assert (status, out, err) == (0, [], "")


def test_the_served_relay_declares_what_it_needs(acp_servers):
    """PEP 723 inline metadata, so `uv run <URL>` installs `websockets` by itself."""
    text = httpx.get(acp_servers() + "/acp/relay.py", timeout=30).text
    block = re.search(r"^# /// script$\s(?P<content>(^#(| .*)$\s)+)^# ///$", text, re.M)
    assert block is not None
    metadata = tomllib.loads("".join(line[2:] + "\n" for line in block["content"].splitlines()))
    assert metadata["dependencies"] == ["websockets>=13"]
    assert "import django" not in text and "from a2a" not in text


def ws_url(server: str) -> str:
    return server.replace("http://", "ws://") + "/acp/"


def test_the_socket_closes_4401_with_the_reason_for_a_refused_key(acp_servers):
    with (
        connect(
            ws_url(acp_servers()), additional_headers={"Authorization": "Bearer td_x_nope"}
        ) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        ws.recv(timeout=15)
    assert closed.value.rcvd.code == 4401
    assert closed.value.rcvd.reason == "API key refused: unknown or revoked API key"


def test_a_socket_without_a_key_authenticates_in_band(acp_servers, acp_key):
    """No Authorization header: as the stdio door without TASKDECK_API_KEY — -32000 until
    `authenticate` with the key in `_meta`; one with no key there is refused (the server's
    own environment is never a fallback)."""
    with connect(ws_url(acp_servers())) as ws:

        def call(rpc_id: int, method: str, params: dict) -> dict:
            ws.send(
                json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})
            )
            while "id" not in (message := json.loads(ws.recv(timeout=15))):
                pass
            return message

        assert call(1, "session/list", {})["error"]["code"] == -32000
        bare = call(2, "authenticate", {"methodId": "taskdeck-api-key"})
        assert bare["error"]["code"] == -32000 and "no key" in bare["error"]["data"]["detail"]
        meta = {"taskdeck/apiKey": acp_key}
        assert call(3, "authenticate", {"methodId": "taskdeck-api-key", "_meta": meta}) == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {},
        }
        made = call(4, "session/new", {"cwd": "/w", "mcpServers": []})["result"]["sessionId"]
    assert AcpSession.objects.filter(pk=made).exists()


def test_socket_opens_count_against_the_tenants_rate(acp_servers, acp_key):
    server = acp_servers(TASKDECK_RATE_SOCKET="1")
    headers = {"Authorization": f"Bearer {acp_key}"}
    with connect(ws_url(server), additional_headers=headers) as first:
        first.send(json.dumps(INITIALIZE))
        assert json.loads(first.recv(timeout=15))["id"] == 0
        with (
            connect(ws_url(server), additional_headers=headers) as second,
            pytest.raises(ConnectionClosed) as closed,
        ):
            second.recv(timeout=15)
    assert closed.value.rcvd.code == 4429 and "retry in" in closed.value.rcvd.reason


@pytest.mark.asyncio
async def test_a_message_over_the_sockets_limit_is_said_not_sent():
    """Daphne closes a socket that is sent a message over 1 MiB (1011, and the editor's
    session with it). The door's updates stay far below (artifact texts are cut at 4,000
    characters), but should one not: an answer becomes an error answer to its request, an
    update a line saying it was left out, and the socket goes on."""
    frames: list[str] = []

    async def send(event: dict) -> None:
        frames.append(event["text"])

    transport = SocketTransport(send, max_line=4096)
    huge = "x" * SOCKET_MESSAGE_BYTES
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": huge}}
    await transport.send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "sess-1", "update": update},
        }
    )
    await transport.send({"jsonrpc": "2.0", "id": 7, "result": {"big": huge}})
    await transport.send({"jsonrpc": "2.0", "id": 8, "result": {}})
    said, answer, small = (json.loads(f) for f in frames)
    assert all(len(f) < 1000 for f in frames)
    note = s.SessionNotification.model_validate(said["params"])
    assert note.session_id == "sess-1" and "this update was left out" in note.update.content.text
    assert s.AgentErrorMessage.model_validate(answer).error.code == -32603 and answer["id"] == 7
    assert "over the remote door's limit" in answer["error"]["data"]["detail"]
    assert small == {"jsonrpc": "2.0", "id": 8, "result": {}}


@pytest.mark.asyncio
async def test_the_sdks_own_websocket_client_speaks_to_the_socket(acp_servers, acp_key):
    """The socket's framing (one JSON-RPC message per text frame) is the one the SDK's
    experimental WebSocket transport (`acp.ws`) uses: a client with it needs no relay."""
    from acp import PROTOCOL_VERSION, connect_to_agent
    from acp.ws.client import create_websocket_stream

    from tests.acp_door.peer import Client

    url = ws_url(acp_servers())
    stream = await create_websocket_stream(url, headers={"Authorization": f"Bearer {acp_key}"})
    conn = connect_to_agent(Client(None), stream, use_unstable_protocol=True)
    try:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_info.name == "taskdeck"
        listed = await conn.list_sessions()
        assert listed.sessions == []
    finally:
        await conn.close()
