"""Spends a token budget per step and asks to be paused when it runs out."""

from __future__ import annotations

from a2a.runtime.context import AgentContext

SKILL = {
    "id": "budget",
    "name": "Budgeted research",
    "description": "Spends tokens step by step; past metadata.budget (default 300) it asks "
    'to be paused with a reason. Resume with input {"budget": n} to raise the budget.',
    "tags": ["demo", "budget", "pause"],
    "examples": ["Research three vendors for log storage"],
}
STEPS = 6
# What a resume may bring: more budget (the dashboard's resume form shows this field).
EXPECTS = [
    {
        "name": "budget",
        "label": "Extra budget (tokens)",
        "type": "integer",
        "minimum": 0,
        "required": False,
        "help": "Added to the budget; leave empty to go on with none.",
    }
]


async def run(ctx: AgentContext) -> str:
    budget = int(ctx.metadata.get("budget", 300))
    spent = 0
    for i in range(STEPS):
        spent += await ctx.step(f"think {i}", _think, ctx, i)
        await ctx.progress(i + 1, STEPS)
        if spent > budget:
            info = await ctx.pause_self(
                f"token budget exceeded: spent {spent} of {budget}", expects=EXPECTS
            )
            extra = info.input.get("budget", 0) if isinstance(info.input, dict) else 0
            budget += int(extra) if isinstance(extra, int) else 0
            await ctx.emit_text(f"Resumed ({info.cause}); budget is now {budget}.")
    return f"Research done; spent {spent} tokens."


async def _think(ctx: AgentContext, i: int) -> int:
    await ctx.sleep(0.5)
    return 80 + 10 * i
