"""Test agent whose replay disagrees with its record: it reads a changing value outside a
step, which durable execution forbids (registered only in test workers)."""

from a2a.runtime.context import AgentContext

SKILL = {"id": "shifty", "name": "Shifty (test)", "description": "non-deterministic"}


async def run(ctx: AgentContext) -> str:
    await ctx.step("first look", lambda: 1)
    if ctx.resume is None:  # differs between the first slice and the replay after a resume
        await ctx.step("before any resume", lambda: 2)
    await ctx.pause_self("look at me")
    return "done"
