"""Hosted ACP agents for tests: the configuration file (real peers: the RFC agent in
tests/runtime/peers/ and the npm SDK's example agent from `make acp-peers`), made known to
this process (settings) and to the processes it starts (the environment)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from a2a.acp_host import config

ROOT = Path(__file__).resolve().parents[2]
RFC_AGENT = ROOT / "tests" / "runtime" / "peers" / "rfc_agent.py"
EXAMPLE_AGENT = (
    ROOT / ".acp-peers" / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples"
    / "agent.js"
)  # fmt: skip


def write_agents(where: Path) -> tuple[Path, Path]:
    """The agents file (editors' shape) and the RFC agent's state directory, in `where`."""
    state_dir = where / "rfc-state"
    state_dir.mkdir(exist_ok=True)
    agents = {
        "RFC agent": {
            "command": sys.executable,
            "args": [str(RFC_AGENT)],
            "env": {"RFC_AGENT_STATE_DIR": str(state_dir)},
            "skill": "rfc-agent",
            "description": "The suspend RFC's test agent",
        },
        "Impatient RFC agent": {  # the same agent; a turn silent for 1 s is cut off
            "command": sys.executable,
            "args": [str(RFC_AGENT)],
            "env": {"RFC_AGENT_STATE_DIR": str(state_dir)},
            "skill": "rfc-impatient",
            "turnSeconds": 1,
        },
        "RFC agent that only loads": {  # no session/resume: a takeover replays it
            "command": sys.executable,
            "args": [str(RFC_AGENT)],
            "env": {"RFC_AGENT_STATE_DIR": str(state_dir), "RFC_AGENT_NO_RESUME": "1"},
            "skill": "rfc-load",
        },
        "Forgetful RFC agent": {  # offers resume, but a new process knows no session
            "command": sys.executable,
            "args": [str(RFC_AGENT)],
            "env": {"RFC_AGENT_STATE_DIR": str(state_dir), "RFC_AGENT_FORGETFUL": "1"},
            "skill": "rfc-forgetful",
        },
        "Sleepy RFC agent": {  # idle for 1 s: its process is stopped until the next message
            "command": sys.executable,
            "args": [str(RFC_AGENT)],
            "env": {"RFC_AGENT_STATE_DIR": str(state_dir)},
            "skill": "rfc-sleepy",
            "idleSeconds": 1,
        },
        "Sleepy example agent": {  # loads nothing: the next message gets a new session
            "command": "node",
            "args": [str(EXAMPLE_AGENT)],
            "skill": "example-sleepy",
            "idleSeconds": 1,
        },
        # never answers (a process that is not an ACP agent at all)
        "Mute": {"command": "sleep", "args": ["600"], "skill": "mute", "requestSeconds": 1},
        # killed while starting, having said why on stderr
        "Dies at start": {
            "command": "sh",
            "args": ["-c", "echo 'out of memory' >&2; kill -9 $$"],
            "skill": "dies-at-start",
        },
        "Example agent": {
            "command": "node",
            "args": [str(EXAMPLE_AGENT)],
            "skill": "acp-example",
            "description": "The example agent of @agentclientprotocol/sdk",
        },
    }
    path = where / "agents.json"
    path.write_text(json.dumps({"agent_servers": agents}))
    return path, state_dir


@contextmanager
def configured(path: Path, env: dict[str, str]) -> Iterator[None]:
    """This process's settings name the agents file, and `env` (the environment of the
    processes started meanwhile) too; both are restored after."""
    cfg = settings.TASKDECK["ACP_HOST"]
    before = cfg["AGENTS_FILE"]
    cfg["AGENTS_FILE"] = str(path)
    config.agents.cache_clear()
    had = env.get("TASKDECK_ACP_AGENTS")
    env["TASKDECK_ACP_AGENTS"] = str(path)
    try:
        yield
    finally:
        cfg["AGENTS_FILE"] = before
        config.agents.cache_clear()
        if had is None:
            env.pop("TASKDECK_ACP_AGENTS", None)
        else:
            env["TASKDECK_ACP_AGENTS"] = had


def example_installed() -> bool:
    return EXAMPLE_AGENT.exists() and os.access(EXAMPLE_AGENT, os.R_OK)
