"""Parks until a deadline, then resumes with its summary and does its scheduled work."""

from __future__ import annotations

from a2a.runtime.context import AgentContext

SKILL = {
    "id": "scheduled",
    "name": "Scheduled work",
    "description": "Parks until a deadline (metadata.minutes, default 1) and resumes with "
    "a summary when it passes.",
    "tags": ["demo", "timeout"],
    "examples": ["Post the daily digest at 09:00"],
}


async def run(ctx: AgentContext) -> str:
    minutes = int(ctx.metadata.get("minutes", 1))
    await ctx.emit_text(f"Scheduled: continuing in {minutes} minute(s).")
    info = await ctx.await_resumption(
        "sleeping until the scheduled time",
        {"timeout": {"durationMinutes": minutes, "onTimeout": "resume_with_summary"}},
        summary="Scheduled run: nothing to do until the deadline.",
    )
    await ctx.emit_text(f"Woke ({info.cause}): {info.input}")
    await ctx.step("scheduled work", _work, ctx)
    return "Scheduled work done."


async def _work(ctx: AgentContext) -> dict:
    await ctx.sleep(1.0)
    return {"posted": True}
