"""Processes N items with progress and an artifact line per item: long enough to pause."""

from __future__ import annotations

from a2a.runtime import leases
from a2a.runtime.context import AgentContext

SKILL = {
    "id": "batch",
    "name": "Batch job",
    "description": "Processes metadata.items (default 20) items, reporting progress and "
    "appending each result to an artifact.",
    "tags": ["demo", "progress", "artifacts"],
    "examples": ["Re-render 20 thumbnails"],
}
RESULTS = "batch-results"


async def run(ctx: AgentContext) -> str:
    total = int(ctx.metadata.get("items", 20))
    await ctx.emit_text(f"Processing {total} items.")
    for i in range(total):
        result = await ctx.step(f"item {i}", _process, ctx, i)
        # The result lands in the artifact in the same transaction as its step record:
        # exactly once, even if the worker dies here.
        await ctx.add_artifact(RESULTS, data=result, artifact_id=RESULTS, append=i > 0)
        await ctx.progress(i + 1, total)
    return f"Processed {total} items."


async def _process(ctx: AgentContext, i: int) -> dict:
    await ctx.sleep(0.5)
    return {"item": i, "worker": leases.WORKER_ID}
