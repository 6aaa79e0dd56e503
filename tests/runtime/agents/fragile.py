"""Test agent: the demo batch agent's loop (a recorded step, an artifact line and progress
per item) whose item `metadata.failAt` fails while the file `<ledger>.broken` exists — an
outside service that is down, then fixed. Every item it works on is written to
`metadata.ledger` as "<task id> <item>", so a test sees which items ran, and how often
(registered only in test workers)."""

from __future__ import annotations

from pathlib import Path

from a2a.runtime.context import AgentContext

SKILL = {"id": "fragile", "name": "Fragile batch (test)", "description": "fails at an item"}
RESULTS = "fragile-results"


async def run(ctx: AgentContext) -> str:
    total = int(ctx.metadata.get("items", 10))
    await ctx.emit_text(f"Processing {total} items.")
    for i in range(total):
        result = await ctx.step(f"item {i}", _process, ctx.metadata, ctx.task_id, i)
        await ctx.add_artifact(RESULTS, data=result, artifact_id=RESULTS, append=i > 0)
        await ctx.progress(i + 1, total)
    return f"Processed {total} items."


def _process(metadata: dict, task_id: str, i: int) -> dict:
    ledger = Path(metadata["ledger"])
    with ledger.open("a") as f:
        f.write(f"{task_id} {i}\n")
    if i == metadata.get("failAt") and Path(f"{ledger}.broken").exists():
        raise RuntimeError(f"item {i}: the image service is down")
    return {"item": i, "by": task_id}
