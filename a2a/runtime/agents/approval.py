"""Drafts a plan step by step, asks an operator to approve or reject it, acts on the answer."""

from __future__ import annotations

from a2a.runtime.context import AgentContext

SKILL = {
    "id": "approval",
    "name": "Approval flow",
    "description": "Drafts a plan step by step, asks for approval (approve/reject with a "
    "comment), then carries it out or stands down.",
    "tags": ["demo", "approval", "input-required"],
    "examples": ["Roll out release 2.14 to production"],
}
STAGES = ("Assess the impact", "Prepare a rollback", "Schedule the change")


async def run(ctx: AgentContext) -> str:
    goal = ctx.request_text or "the change"
    await ctx.emit_text(f"Drafting a plan for: {goal}")
    plan = []
    for i, stage in enumerate(STAGES, 1):
        plan.append(await ctx.step(f"draft {i}", _draft, ctx, stage, goal))
        await ctx.progress(i, len(STAGES) * 2)
    await ctx.add_artifact("plan.md", text="\n".join(f"{i}. {p}" for i, p in enumerate(plan, 1)))
    answer = await ctx.request_input(
        "Approve the plan",
        fields=[{"name": "decision", "label": "Decision", "type": "approval", "required": True}],
        explanation="The plan is ready (see plan.md). Approve to carry it out, or reject it "
        "with a comment.",
    )
    decision = answer["decision"]
    comment = decision.get("comment") or "no comment"
    if decision["decision"] == "reject":
        await ctx.emit_text(f"Standing down: the plan was rejected ({comment}).")
        return f"Plan rejected: {comment}. Nothing was changed."
    for i, stage in enumerate(plan, 1):
        await ctx.step(f"act {i}", _act, ctx, stage)
        await ctx.progress(len(STAGES) + i, len(STAGES) * 2)
    return f"Plan carried out. Approver said: {comment}"


async def _draft(ctx: AgentContext, stage: str, goal: str) -> str:
    await ctx.sleep(1.0)
    return f"{stage} for {goal}"


async def _act(ctx: AgentContext, stage: str) -> str:
    await ctx.sleep(1.0)
    return f"done: {stage}"
