"""The skills this Taskdeck offers: the agent card's list, the modes of an ACP session, the
board's agent filter — and what `create_task` checks a new task's skill against.

The core does not know where skills come from. Providers register here from their
AppConfig.ready(): the runtime offers its Python agents (a2a.runtime.registry); the ACP
host offers the external agents it runs (a2a.acp_host.config), their cards tagged
`HOSTED_TAG`. Providers are asked on each call (cheap: they cache). Others learn about
hosted agents here, never from the host (docs/architecture.md, rule 5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Provider = Callable[[], list[dict[str, Any]]]
# On every hosted ACP agent's skill card: the dashboard's demo launcher offers them, its
# task page says that "stop now" may cancel the agent's turn, and `manage.py serve` starts
# the host's supervisor (`run_acp_host`) when any is configured (`hosted`).
HOSTED_TAG = "acp-hosted"
PROVIDERS: list[Provider] = []
# Providers whose tasks their own processes run (hosted ACP agents' supervisors): the
# runtime's workers leave those tasks alone.
RUN_ELSEWHERE: list[Provider] = []


def register(provider: Provider, *, runs_own_tasks: bool = False) -> Provider:
    """Add a provider of skill cards; registering the same one twice is a no-op.
    `runs_own_tasks`: its skills' tasks are run by the provider's own processes, not by
    the agent runtime's workers."""
    if provider not in PROVIDERS:
        PROVIDERS.append(provider)
    if runs_own_tasks and provider not in RUN_ELSEWHERE:
        RUN_ELSEWHERE.append(provider)
    return provider


def run_elsewhere() -> set[str]:
    """The skills whose work is done outside the agent runtime (a2a.runtime)."""
    return {s["id"] for p in RUN_ELSEWHERE for s in p()}


def hosted() -> list[str]:
    """The skills of hosted ACP agents: cards tagged `HOSTED_TAG` from providers whose
    tasks run in their own processes."""
    return [s["id"] for p in RUN_ELSEWHERE for s in p() if HOSTED_TAG in (s.get("tags") or ())]


# The media types a skill takes in message parts when its card names none (`inputModes`):
# text, and JSON (data parts; structured answers to input requests are data parts). The
# agent card's `defaultInputModes` is this list (docs/protocol.md, "Content types").
DEFAULT_INPUT_MODES = ("text/plain", "application/json")


def catalog() -> list[dict[str, Any]]:
    """Every skill card (`id`, `name`, `description`, `tags`, `examples`, `inputModes`),
    first one wins. `inputModes` is the card's own or DEFAULT_INPUT_MODES."""
    seen: dict[str, dict[str, Any]] = {}
    for provider in PROVIDERS:
        for skill in provider():
            if skill["id"] not in seen:
                modes = list(skill.get("inputModes") or DEFAULT_INPUT_MODES)
                seen[skill["id"]] = {**skill, "inputModes": modes}
    return list(seen.values())


def input_modes(skill_id: str) -> list[str]:
    """The media types `skill_id` accepts in message parts (DEFAULT_INPUT_MODES for a
    skill no provider offers any more: its old tasks still take answers)."""
    card = get(skill_id)
    return card["inputModes"] if card is not None else list(DEFAULT_INPUT_MODES)


def get(skill_id: str) -> dict[str, Any] | None:
    return next((s for s in catalog() if s["id"] == skill_id), None)


def ids() -> list[str]:
    return [s["id"] for s in catalog()]
