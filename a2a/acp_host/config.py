"""Which ACP agents Taskdeck hosts, configured the way editors configure them.

Zed's `settings.json` (`agent_servers`) and JetBrains' `acp.json` describe an agent as
`{"command", "args", "env"}`; Taskdeck reads the same shape from the JSON file named by
TASKDECK_ACP_AGENTS (settings TASKDECK["ACP_HOST"]["AGENTS_FILE"]) — either
`{"agent_servers": {name: spec}}` or `{name: spec}` — plus settings' own `AGENTS` mapping
(tests, Python deployments). Each spec may add:
- `description`, `tags`, `examples`: its skill card;
- `skill`: the skill id (default: the name, lower-cased, runs of other characters → `-`);
- `cwd`: the working directory its sessions get (default: a directory per task under
  var/acp-sessions/);
- `turnSeconds`: a turn with no message from the agent for this long is cancelled, then
  the agent stopped (default TASKDECK["ACP_HOST"]["TURN_SECONDS"]);
- `requestSeconds`: how long it may take to start and answer initialize, session/new,
  load, resume or suspend (default TASKDECK["ACP_HOST"]["REQUEST_SECONDS"]);
- `idleSeconds`: a session idle this long has its process stopped until its next message
  (default TASKDECK["ACP_HOST"]["IDLE_SECONDS"]; 0: never).

Zed's own choices in an entry (`default_mode`, `default_model`, `favorite_models` …,
EDITOR_KEYS) are ignored with a note in the log, so a block copied from Zed starts as is;
any other key is refused at start with a message naming it and the setting.

Nothing else is passed to the child: its environment is the SDK's trimmed default plus
`env` (no DATABASE_URL, no secrets of Taskdeck's unless you put them there).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from a2a import conf
from a2a.skills import HOSTED_TAG  # on every hosted agent's skill card (a2a.skills.hosted)

log = logging.getLogger(__name__)

SPEC_KEYS = {"type", "command", "args", "env", "description", "tags", "examples", "skill",
             "cwd", "turnSeconds", "requestSeconds", "idleSeconds", "name"}  # fmt: skip
# Keys Zed's `agent_servers` entries carry that are the editor's own choices (its picker's
# defaults and favourites): harmless to a host, which picks nothing for the user. A block
# copied from Zed's settings starts with them ignored (and a note in the log).
EDITOR_KEYS = {"default_mode", "default_model", "default_config_options", "favorite_models",
               "favorite_config_option_values", "ignore_system_version"}  # fmt: skip


@dataclass(frozen=True)
class HostedAgent:
    name: str
    skill_id: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    cwd: str = ""
    turn_seconds: float = 0.0
    request_seconds: float = 0.0
    idle_seconds: float | None = None  # None: TASKDECK_ACP_HOST_IDLE_SECONDS; 0: never

    def idle_limit(self) -> float:
        """Seconds an idle session keeps its process (0: for ever)."""
        return conf.ACP_HOST.idle_seconds if self.idle_seconds is None else self.idle_seconds

    def card(self) -> dict[str, Any]:
        """The agent card's skill entry (a2a.skills)."""
        return {
            "id": self.skill_id,
            "name": self.name,
            "description": self.description or f"The ACP agent {self.name}, hosted by Taskdeck.",
            "tags": [HOSTED_TAG, *self.tags],
            "examples": list(self.examples) or ["Hello"],
        }


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "agent"


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ImproperlyConfigured(f"{where} must be a list of strings")
    return tuple(value)


def parse(name: str, spec: Any, where: str = "hosted ACP agent") -> HostedAgent:
    """One agent's spec, checked: a mistake names the agent and the field."""
    at = f"{where} {name!r}"
    if not isinstance(spec, dict):
        raise ImproperlyConfigured(f"{at} must be an object with a command")
    unknown = sorted(set(spec) - SPEC_KEYS - EDITOR_KEYS)
    if unknown:
        raise ImproperlyConfigured(
            f"{at}: unknown field(s) {', '.join(unknown)} (a hosted agent takes "
            f"{', '.join(sorted(SPEC_KEYS))}; Zed's {', '.join(sorted(EDITOR_KEYS))} are ignored)"
        )
    if ignored := sorted(set(spec) & EDITOR_KEYS):
        log.info("%s: ignored the editor's setting(s) %s", at, ", ".join(ignored))
    command = spec.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ImproperlyConfigured(f"{at}: `command` must be a non-empty string")
    env = spec.get("env", {})
    if isinstance(env, list):  # Zed also writes env as [{"name", "value"}]
        env = {e.get("name"): e.get("value") for e in env if isinstance(e, dict)}
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise ImproperlyConfigured(f"{at}: `env` must map names to strings")
    skill_id = spec.get("skill") or slug(name)
    if not isinstance(skill_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", skill_id):
        raise ImproperlyConfigured(f"{at}: `skill` must be 1-64 of a-z 0-9 _ . - ")
    seconds = {}
    for key in ("turnSeconds", "requestSeconds", "idleSeconds"):
        value = spec.get(key, 0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ImproperlyConfigured(f"{at}: `{key}` must be a number of seconds")
        seconds[key] = float(value)
    cwd = spec.get("cwd", "")
    if not isinstance(cwd, str) or (cwd and not Path(cwd).is_absolute()):
        raise ImproperlyConfigured(f"{at}: `cwd` must be an absolute path")
    return HostedAgent(
        name=str(spec.get("name") or name)[:100],
        skill_id=skill_id,
        command=command,
        args=_strings(spec.get("args", []), f"{at}: `args`"),
        env=dict(env),
        description=str(spec.get("description", ""))[:1000],
        tags=_strings(spec.get("tags", []), f"{at}: `tags`"),
        examples=_strings(spec.get("examples", []), f"{at}: `examples`"),
        cwd=cwd,
        turn_seconds=seconds["turnSeconds"],
        request_seconds=seconds["requestSeconds"],
        idle_seconds=seconds["idleSeconds"] if "idleSeconds" in spec else None,
    )


def _from_file(path: str) -> dict[str, Any]:
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"TASKDECK_ACP_AGENTS={path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f"TASKDECK_ACP_AGENTS={path}: must hold a JSON object")
    servers = raw.get("agent_servers", raw)
    if not isinstance(servers, dict):
        raise ImproperlyConfigured(f"TASKDECK_ACP_AGENTS={path}: agent_servers must be an object")
    return servers


@cache
def agents() -> dict[str, HostedAgent]:
    """Every hosted agent by skill id (cached: settings do not change while running;
    tests that change them call `agents.cache_clear()`)."""
    specs: dict[str, tuple[Any, str]] = {}
    if path := conf.ACP_HOST.agents_file:
        where = f"TASKDECK_ACP_AGENTS={path}: agent"
        specs.update({name: (spec, where) for name, spec in _from_file(path).items()})
    where = 'settings TASKDECK["ACP_HOST"]["AGENTS"]: agent'
    specs.update({name: (spec, where) for name, spec in conf.ACP_HOST.agents.items()})
    found: dict[str, HostedAgent] = {}
    for name, (spec, where) in specs.items():
        agent = parse(name, spec, where)
        if agent.skill_id in found:
            raise ImproperlyConfigured(f"two hosted ACP agents have the skill {agent.skill_id!r}")
        found[agent.skill_id] = agent
    return found


def check_all() -> None:
    agents()


def get(skill_id: str) -> HostedAgent | None:
    return agents().get(skill_id)


def skills() -> list[dict[str, Any]]:
    return [a.card() for a in agents().values()]
