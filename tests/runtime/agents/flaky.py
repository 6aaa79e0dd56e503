"""Test agent: fails after its first step (registered only in test workers)."""

from a2a.runtime.context import AgentContext

SKILL = {"id": "flaky", "name": "Flaky (test)", "description": "fails after one step"}


async def run(ctx: AgentContext) -> str:
    await ctx.step("warm up", lambda: 1)
    raise ValueError("the model returned garbage")
