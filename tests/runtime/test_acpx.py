"""A real ACP client that is not ours: the `acpx` command-line client (npm) drives
`manage.py acp` — one prompt to completion, and a persistent session that two acpx
processes (so two agent processes) share. Installed by `make acp-peers`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from a2a.acp_door.models import AcpSession
from a2a.models import Task
from tests.acp_door.conftest import TRANSPORTS
from tests.acp_door.peer import ROOT, agent_env
from tests.runtime.conftest import settle_tasks, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
ACPX = ROOT / ".acp-peers" / "node_modules" / ".bin" / "acpx"
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'manage.py'))} acp"


def acpx_runner(
    acp_key: str,
    tmp_path,
    *,
    agent: list[str] | None = None,
    env: dict | None = None,
    **agent_extra,
):
    """run(*args) → the finished acpx process; HOME is a fresh directory (acpx keeps its
    sessions under ~/.acpx), the agent gets the test database, the key and `agent_extra` —
    or runs `agent` (a command) with `env` (the remote door's relay)."""
    if not ACPX.exists():
        reason = "acpx is not installed: run `make acp-peers`"
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {**(env if env is not None else agent_env(acp_key, **agent_extra)), "HOME": str(home)}
    command = shlex.join(agent) if agent else AGENT

    def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        cmd = [str(ACPX), "--agent", command, "--cwd", str(work), *args]
        return subprocess.run(cmd, env=env, capture_output=True, timeout=timeout, check=False)

    return run


@pytest.fixture(params=TRANSPORTS)
def acpx(request, runtime, acp_key, tmp_path):
    """acpx driving `manage.py acp`, or the remote door's relay (no database settings)
    before a live server: the doors of TRANSPORTS (tests/acp_door/conftest.py)."""
    if request.param == "remote":
        from tests.acp_door.conftest import relay_command, relay_env

        relay = request.getfixturevalue("relay_file")
        server = request.getfixturevalue("acp_servers")()
        agent = relay_command(relay, server)
        run = acpx_runner(acp_key, tmp_path, agent=agent, env=relay_env(acp_key))
    else:
        run = acpx_runner(acp_key, tmp_path)
    yield run
    run("sessions", "close", "backend", timeout=30)
    settle_tasks(list(Task.objects.values_list("id", flat=True)))


def messages(out: bytes) -> list[dict]:
    """acpx --format json prints the JSON-RPC traffic, one message per line."""
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def test_acpx_runs_a_prompt_to_completion(acpx):
    done = acpx("--format", "json", "--approve-all", "exec", "Roll out 2.14")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    traffic = messages(done.stdout)
    answers = [m["result"] for m in traffic if isinstance(m.get("result"), dict)]
    assert any(a.get("stopReason") == "end_turn" for a in answers)
    asked = [m for m in traffic if m.get("method") == "session/request_permission"]
    assert len(asked) == 1 and asked[0]["params"]["toolCall"]["title"] == "Approve the plan"
    updates = [m["params"]["update"] for m in traffic if m.get("method") == "session/update"]
    assert {"sessionUpdate": "tool_call_update", "status": "completed"}.items() <= updates[
        -1
    ].items()
    [task] = Task.objects.all()
    assert (task.state, task.origin) == ("completed", "acp")
    assert "Approver said" in " ".join(p["text"] for p in task.status_message.parts)


def test_acpx_keeps_a_session_across_two_processes(acpx):
    made = acpx("sessions", "new", "--name", "backend")
    assert made.returncode == 0, made.stderr.decode()[-2000:]
    [session] = AcpSession.objects.all()
    for text in ("Roll out 2.14", "Roll out 2.15"):
        run = acpx(
            "--format", "json", "--approve-all", "--ttl", "1", "prompt", "-s", "backend", text
        )
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        requests = [m["method"] for m in messages(run.stdout) if "method" in m and "id" in m]
        # a fresh agent process each time: it is initialized and reattaches the session
        assert requests[:3] == ["initialize", "session/resume", "session/prompt"], requests
        assert "session/new" not in requests
        wait_for(  # the agent process exits when acpx's idle TTL (1 s) runs out
            lambda: b"status: idle" in acpx("status", "-s", "backend", timeout=30).stdout,
            what="acpx to stop the agent process",
        )
    tasks = list(Task.objects.order_by("created_at"))
    assert [t.state for t in tasks] == ["completed", "completed"]
    assert {t.context_id for t in tasks} == {session.context_id}  # one session, two turns
    assert [t.messages.order_by("seq").first().parts[0]["text"] for t in tasks] == [
        "Roll out 2.14",
        "Roll out 2.15",
    ]
    assert {t.origin_ref for t in tasks} == {session.session_id}
