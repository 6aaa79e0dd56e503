"""Agents are registered in settings (TASKDECK["AGENTS"], dotted module paths). Each module
defines `SKILL` (its agent-card entry) and `async def run(ctx)`, and may set `INLINE = True`:
its runs that a blocking send starts execute in the web process (a2a.runtime.inline) — for
agents whose first slice ends within moments (they answer, ask or park at once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Any

from a2a import conf


@dataclass(frozen=True)
class Agent:
    skill: dict[str, Any]
    run: Callable[[Any], Awaitable[Any]]
    inline: bool = False

    @property
    def id(self) -> str:
        return self.skill["id"]


@cache
def agents() -> dict[str, Agent]:
    found: dict[str, Agent] = {}
    for path in conf.TASKDECK.agents:
        module = import_module(path)
        agent = Agent(skill=module.SKILL, run=module.run, inline=getattr(module, "INLINE", False))
        found[agent.id] = agent
    return found


def get(skill: str) -> Agent | None:
    return agents().get(skill)


def skills() -> list[dict[str, Any]]:
    return [a.skill for a in agents().values()]
