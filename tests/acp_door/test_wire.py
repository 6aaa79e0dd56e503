"""What `manage.py acp` does with lines no real client should send: each gets a JSON-RPC
error on stdout, nothing is written, and the process keeps serving. Raw bytes on stdin,
because the SDK client cannot send garbage. The same lines through the remote door (the
relay on stdin, the server's socket behind it: tests/acp_door/conftest.py) get the same
answers."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import pytest
from django.db import connections

from a2a.acp_door.models import AcpSession
from tests.acp_door.conftest import DOORS, relay_command, relay_env
from tests.acp_door.peer import ROOT, agent_env, schema_problem

pytestmark = pytest.mark.django_db(transaction=True)
MAX_LINE = 4096


class RawAgent:
    def __init__(self, env: dict[str, str], command: list[str] | None = None, cwd=ROOT) -> None:
        self.proc = subprocess.Popen(
            command or [sys.executable, str(ROOT / "manage.py"), "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr: list[bytes] = []
        self.notified: list[dict] = []
        threading.Thread(
            target=self._read, args=(self.proc.stdout, self.lines.put), daemon=True
        ).start()
        threading.Thread(
            target=self._read, args=(self.proc.stderr, self.stderr.append), daemon=True
        ).start()

    @staticmethod
    def _read(stream, put) -> None:
        for line in iter(stream.readline, b""):
            put(line)

    def send(self, line: bytes) -> dict:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        return self.answer()

    def answer(self) -> dict:
        raw = self.lines.get(timeout=30)
        message = json.loads(raw)  # every stdout line is a protocol message
        assert schema_problem(message) is None, schema_problem(message)  # updates, errors
        return message

    def call(self, rpc_id, method: str, params) -> dict:
        """The answer to this call; notifications that come first (a session's
        `available_commands_update`) are kept in `notified`."""
        body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
        message = self.send(json.dumps(body).encode())
        while "method" in message and "id" not in message:
            self.notified.append(message)
            message = self.answer()
        assert schema_problem(message, method) is None, schema_problem(message, method)
        return message

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


@pytest.fixture
def raw_agent(acp_key, django_db_blocker, transport, request):
    """The stdio door with a MAX_LINE limit, or the relay before a server that has it."""
    with django_db_blocker.unblock():
        connections.close_all()
    if transport == "remote":
        relay = request.getfixturevalue("relay_file")
        server = request.getfixturevalue("acp_servers")()  # its line limit is MAX_LINE
        agent = RawAgent(relay_env(acp_key), relay_command(relay, server), cwd=relay.parent)
    else:
        agent = RawAgent(agent_env(acp_key, TASKDECK_ACP_MAX_LINE_BYTES=str(MAX_LINE)))
    init = agent.call(0, "initialize", {"protocolVersion": 1})
    assert init["result"]["protocolVersion"] == 1, init
    yield agent
    agent.close()


def nested(depth: int):
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


BAD_LINES = [
    (b"{not json", None, -32700),
    (b'{"jsonrpc":"2.0","id":1,"method":"session/list"', None, -32700),
    (b"null", None, -32600),
    (b'"just a string"', None, -32600),
    (b"42", None, -32600),
    (b'[{"jsonrpc":"2.0","id":1,"method":"session/list"}]', None, -32600),
    (b'{"foo": 1}', None, -32600),
    (b'{"jsonrpc":"2.0","id":3,"method":"session/list","params":{"x":1e400}}', None, -32700),
    (b'{"jsonrpc":"2.0","id":4,"method":"session/list","params":{"x":NaN}}', None, -32700),
    (b"[" * 2000 + b"]" * 2000, None, -32700),  # deeper than Python's recursion
    (b"[" * 100_000 + b"]" * 100_000, None, -32600),  # and over the line limit
]


@DOORS
def test_every_bad_line_is_answered_and_the_agent_keeps_serving(raw_agent, unchanged):
    with unchanged():
        for line, rpc_id, code in BAD_LINES:
            answer = raw_agent.send(line)
            assert answer.get("error", {}).get("code") == code, (line[:60], answer)
            assert answer["id"] == rpc_id
        params = {"cwd": "x" * (2 * MAX_LINE), "mcpServers": []}
        oversized = json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": params}
        )
        answer = raw_agent.send(oversized.encode())
        assert (
            answer["error"]["code"] == -32600
            and "over 4096 bytes" in answer["error"]["data"]["detail"]
        )
    # still serving, and the oversized line did not leak into the next one
    assert raw_agent.call(6, "session/list", {})["result"] == {"sessions": []}
    assert AcpSession.objects.count() == 0


REFUSED_CALLS = [
    ("session/unknown", {}, -32601),
    ("session/new", {"cwd": 5, "mcpServers": []}, -32602),
    ("session/new", {"cwd": "work/app", "mcpServers": []}, -32602),  # relative (issue 32)
    ("session/new", {"cwd": "", "mcpServers": []}, -32602),
    ("session/new", {"cwd": "C:relative", "mcpServers": []}, -32602),
    ("session/list", {"cwd": "."}, -32602),
    ("session/new", "not an object", -32602),
    ("session/new", {"cwd": "/w\u0000x", "mcpServers": []}, -32602),  # NUL: cannot be stored
    ("session/new", {"cwd": "/w\ud800", "mcpServers": []}, -32602),  # lone surrogate
    ("session/new", {"cwd": "/w", "mcpServers": [], "_meta": {"x": nested(70)}}, -32602),
    ("session/prompt", {"sessionId": "sess-x", "prompt": "hi"}, -32602),
    (
        "session/prompt",
        {"sessionId": "sess-x", "prompt": [{"type": "text", "text": "a\u0000"}]},
        -32602,
    ),
    (
        "session/prompt",
        {"sessionId": "sess-nope", "prompt": [{"type": "text", "text": "hi"}]},
        -32002,
    ),
    # blocks `initialize` did not declare (promptCapabilities: embeddedContext only)
    (
        "session/prompt",
        {
            "sessionId": "sess-x",
            "prompt": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
        },
        -32602,
    ),
    (
        "session/prompt",
        {
            "sessionId": "sess-x",
            "prompt": [{"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}],
        },
        -32602,
    ),
    ("session/set_mode", {"sessionId": "sess-nope", "modeId": 7}, -32602),
    ("session/suspend", [], -32602),
    ("session/suspend", {"sessionId": "sess-nope", "reason": 5}, -32602),
    ("session/suspend", {"sessionId": "sess-nope", "colour": "red"}, -32602),
    ("session/suspend", {"sessionId": "sess-nope"}, -32002),
    ("session/resume", {"sessionId": "sess-nope", "cwd": "/w", "handle": "h"}, -32002),
    ("session/load", {"sessionId": 7, "cwd": "/w", "mcpServers": []}, -32602),
    ("session/load", {"sessionId": "sess-nope", "cwd": "../w", "mcpServers": []}, -32602),
    ("session/resume", {"sessionId": "sess-nope", "cwd": "w"}, -32602),
    ("authenticate", {"methodId": "password"}, -32602),
]


@DOORS
def test_bad_requests_get_their_error_with_their_id_and_write_nothing(raw_agent, unchanged):
    with unchanged():
        for i, (method, params, code) in enumerate(REFUSED_CALLS, start=10):
            answer = raw_agent.call(i, method, params)
            assert answer["id"] == i, (method, answer)
            assert answer.get("error", {}).get("code") == code, (method, params, answer)
            assert "Traceback" not in json.dumps(answer)
    assert AcpSession.objects.count() == 0
    assert raw_agent.call(99, "session/list", {})["result"] == {"sessions": []}
    assert raw_agent.proc.poll() is None
    # An image block although `initialize` declared promptCapabilities.image = false: -32602
    # naming the block and the capability, in a session that exists, and nothing written.
    sid = raw_agent.call(1, "session/new", {"cwd": "/w", "mcpServers": []})["result"]["sessionId"]
    text = {"type": "text", "text": "look at this"}
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    with unchanged():
        answer = raw_agent.call(2, "session/prompt", {"sessionId": sid, "prompt": [text, image]})
    error = answer["error"]
    assert error["code"] == -32602, answer
    assert error["data"]["errors"] == {
        "prompt.1": ["image content is not accepted: this agent declares "
                     "promptCapabilities.image = false"]
    }  # fmt: skip
    assert AcpSession.objects.get(pk=sid).task_id is None


def test_mcp_servers_are_refused_not_ignored(raw_agent, unchanged):
    """The door connects to no MCP server: a non-empty `mcpServers` on session/new, load or
    resume is -32602 naming the field and the server, and nothing is written."""
    sid = raw_agent.call(1, "session/new", {"cwd": "/w", "mcpServers": []})["result"]["sessionId"]
    server = {"name": "files", "command": "/usr/bin/mcp-files", "args": [], "env": []}
    with unchanged():
        for rpc_id, (method, params) in enumerate(
            [
                ("session/new", {"cwd": "/w", "mcpServers": [server]}),
                ("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": [server]}),
                ("session/resume", {"sessionId": sid, "cwd": "/w", "mcpServers": [server]}),
            ],
            start=2,
        ):
            error = raw_agent.call(rpc_id, method, params)["error"]
            assert error["code"] == -32602, (method, error)
            (why,) = error["data"]["errors"]["mcpServers"]
            assert "connects to no MCP servers" in why and "'files'" in why, method
    assert AcpSession.objects.count() == 1


@DOORS
def test_a_relative_cwd_is_refused_with_a_reason_and_absolute_ones_are_taken(raw_agent):
    refused = raw_agent.call(1, "session/new", {"cwd": "src", "mcpServers": []})["error"]
    assert refused["code"] == -32602
    assert refused["data"]["errors"] == {"cwd": ["must be an absolute path, not 'src'"]}
    for i, cwd in enumerate(("/w", "C:\\Users\\ana\\app", "\\\\host\\share\\app"), start=2):
        assert (
            "sessionId"
            in raw_agent.call(i, "session/new", {"cwd": cwd, "mcpServers": []})["result"]
        ), cwd
    assert AcpSession.objects.count() == 3


@DOORS
def test_stdout_carries_protocol_lines_only(raw_agent):
    """Logs, warnings and a failing request's traceback go to stderr; every stdout line
    parses as a JSON-RPC message."""
    raw_agent.call(1, "session/new", {"cwd": "/w", "mcpServers": []})
    raw_agent.call(2, "session/unknown", {})
    raw_agent.close()
    rest = []
    while not raw_agent.lines.empty():
        rest.append(json.loads(raw_agent.lines.get()))
    assert all(m.get("jsonrpc") == "2.0" for m in rest)


def test_stdout_and_stdin_may_be_regular_files(acp_key, django_db_blocker, tmp_path):
    """`manage.py acp < requests.ndjson > answers.ndjson`: no "Pipe transport is only for
    pipes"; every request in the file is answered (schema-clean) before the door ends."""
    from acp import schema as s

    with django_db_blocker.unblock():
        connections.close_all()
    requests = tmp_path / "requests.ndjson"
    answers = tmp_path / "answers.ndjson"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new",
         "params": {"cwd": "/tmp", "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}},
    ]  # fmt: skip
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "acp"],
            stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
            env=agent_env(acp_key), cwd=ROOT, timeout=60,
        )  # fmt: skip
    assert "Pipe transport" not in done.stderr.decode() and "Traceback" not in (
        done.stderr.decode()
    )
    out = [json.loads(line) for line in answers.read_text().splitlines()]
    by_id = {m["id"]: m for m in out if "id" in m and "method" not in m}
    assert sorted(by_id) == [1, 2, 3], out
    methods = {line["id"]: line["method"] for line in lines}
    for message in out:  # every line one the SDK's schema models take
        assert schema_problem(message, methods.get(message.get("id"))) is None, message
    assert s.NewSessionResponse.model_validate(by_id[2]["result"]).session_id
