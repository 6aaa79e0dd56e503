"""Hosted agents' configuration (a2a/acp_host/config.py): the editors' shape is read as
editors write it, and every mistake stops Taskdeck with a message naming the agent and
the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from a2a.acp_host import config

ROOT = Path(__file__).resolve().parents[2]


def test_an_editors_entry_becomes_a_skill():
    agent = config.parse(
        "Claude Code",
        {
            "type": "custom",
            "command": "npx",
            "args": ["-y", "@agentclientprotocol/claude-agent-acp"],
            "env": [{"name": "ANTHROPIC_API_KEY", "value": "k"}],
        },
    )
    assert agent.skill_id == "claude-code" and agent.args == (
        "-y",
        "@agentclientprotocol/claude-agent-acp",
    )
    assert agent.env == {"ANTHROPIC_API_KEY": "k"}  # Zed's list form of env
    card = agent.card()
    assert card["id"] == "claude-code" and card["name"] == "Claude Code"
    assert config.HOSTED_TAG in card["tags"] and card["examples"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "`command` must be a non-empty string"),
        ({"command": "x", "argz": []}, "unknown field(s) argz"),
        ({"command": "x", "args": "--acp"}, "`args` must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "`env` must map names to strings"),
        ({"command": "x", "cwd": "work"}, "`cwd` must be an absolute path"),
        ({"command": "x", "skill": "Not OK"}, "`skill` must be"),
        ({"command": "x", "turnSeconds": -1}, "`turnSeconds` must be a number"),
        ({"command": "x", "idleSeconds": "5m"}, "`idleSeconds` must be a number"),
        ({"command": "x", "idleSeconds": True}, "`idleSeconds` must be a number"),
        ("npx agent", "must be an object with a command"),
    ],
)
def test_a_mistake_names_the_agent_and_the_field(spec, message):
    with pytest.raises(ImproperlyConfigured, match="'Agent'") as caught:
        config.parse("Agent", spec)
    assert message in str(caught.value)


def test_a_file_two_agents_with_one_skill_and_a_broken_file_are_refused(tmp_path):
    good = tmp_path / "agents.json"
    good.write_text(json.dumps({"agent_servers": {"A": {"command": "a"}, "B": {"command": "b"}}}))
    twice = tmp_path / "twice.json"
    twice.write_text(
        json.dumps({"A": {"command": "a", "skill": "s"}, "B": {"command": "b", "skill": "s"}})
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    try:
        with override_settings(TASKDECK={"ACP_HOST": {"AGENTS_FILE": str(good)}}):
            config.agents.cache_clear()
            assert sorted(config.agents()) == ["a", "b"]
        for path, message in ((twice, "two hosted ACP agents have the skill 's'"),
                              (broken, "TASKDECK_ACP_AGENTS=")):  # fmt: skip
            with override_settings(TASKDECK={"ACP_HOST": {"AGENTS_FILE": str(path)}}):
                config.agents.cache_clear()
                with pytest.raises(ImproperlyConfigured, match=message):
                    config.agents()
    finally:
        config.agents.cache_clear()


def test_zeds_own_keys_are_ignored_with_a_note(caplog):
    """A block copied from Zed's settings.json carries the editor's picker defaults."""
    with caplog.at_level("INFO", logger="a2a.acp_host.config"):
        agent = config.parse(
            "Zed's",
            {
                "command": "x",
                "args": ["--acp"],
                "env": {"A": "b"},
                "default_mode": "plan",
                "default_model": "opus",
                "favorite_models": ["opus"],
            },
        )
    assert agent.command == "x" and agent.args == ("--acp",) and agent.env == {"A": "b"}
    assert "ignored the editor's setting(s) default_mode, default_model, favorite_models" in (
        caplog.text
    )


def _start(tmp_path, servers: dict) -> subprocess.CompletedProcess:
    """`manage.py check` (Django set-up, as every start does) with TASKDECK_ACP_AGENTS."""
    path = tmp_path / "zed.json"
    path.write_text(json.dumps({"agent_servers": servers}))
    env = {**os.environ, "TASKDECK_ACP_AGENTS": str(path), "TASKDECK_DEBUG": "1"}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check"],
        env=env, capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


def test_a_zed_block_starts_and_an_unknown_key_stops_start_up_with_a_message(tmp_path):
    zed = {"command": "npx", "args": ["-y", "agent"], "env": {}, "default_mode": "plan"}
    started = _start(tmp_path, {"My Agent": zed})
    assert started.returncode == 0, started.stderr
    refused = _start(tmp_path, {"My Agent": {**zed, "argz": []}})
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    assert "Taskdeck cannot start: TASKDECK_ACP_AGENTS=" in refused.stderr
    assert "'My Agent': unknown field(s) argz" in refused.stderr


def test_an_agents_idle_limit_is_its_own_else_the_settings_and_zero_is_never():
    """`idleSeconds` absent: TASKDECK_ACP_HOST_IDLE_SECONDS (300 unless set); 0: never."""
    assert config.parse("A", {"command": "a"}).idle_limit() == 300
    with override_settings(TASKDECK={"ACP_HOST": {"IDLE_SECONDS": 60}}):
        assert config.parse("A", {"command": "a"}).idle_limit() == 60
        assert config.parse("A", {"command": "a", "idleSeconds": 0}).idle_limit() == 0
        assert config.parse("A", {"command": "a", "idleSeconds": 1.5}).idle_limit() == 1.5
