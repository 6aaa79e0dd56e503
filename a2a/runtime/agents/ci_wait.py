"""Starts a "build", then parks until CI reports it (event or trigger) or 30 minutes pass."""

from __future__ import annotations

import zlib

from a2a.runtime.context import AgentContext

SKILL = {
    "id": "ci-wait",
    "name": "CI wait",
    "description": "Starts a build and parks on ci.build.completed:<n> (or a ci.status event "
    "for that build) with a 30-minute timeout.",
    "tags": ["demo", "await_resumption", "event"],
    "examples": ["Run the integration suite for PR 1234"],
}


async def run(ctx: AgentContext) -> str:
    build = await ctx.step("start build", _start_build, ctx)
    await ctx.emit_text(f"Build {build} started; waiting for CI.")
    timeout = {"durationMinutes": int(ctx.metadata.get("minutes", 30))}
    timeout["onTimeout"] = ctx.metadata.get("onTimeout", "fail")
    if timeout["onTimeout"] == "resume_with_input":
        timeout["input"] = {"status": "assumed-green"}
    info = await ctx.await_resumption(
        f"waiting for ci.build.completed:{build}",
        {
            "onEvent": f"ci.build.completed:{build}",
            "trigger": {"event": "ci.status", "match": {"build": build, "state": "finished"}},
            "timeout": timeout,
        },
        summary=f"Build {build} is running; CI reports in a few minutes.",
    )
    seen = ctx.transcript
    view = "a fresh turn (digest)" if seen and seen[0].get("digest") else f"{len(seen)} messages"
    await ctx.emit_text(f"Woken by {info.cause}; I see {view}.")
    payload = info.input or {}
    status = payload.get("payload", payload).get("status", "unknown")
    await ctx.add_artifact(
        "build-report.json", data={"build": build, "status": status, "cause": info.cause}
    )
    return f"Build {build}: {status}"


async def _start_build(ctx: AgentContext) -> int:
    await ctx.sleep(0.5)
    if "build" in ctx.metadata:
        return int(ctx.metadata["build"])
    return 1000 + zlib.crc32(ctx.task_id.encode()) % 9000
