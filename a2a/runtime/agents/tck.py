"""The scripted agent the A2A conformance kit (a2aproject/a2a-tck) drives by message-id
prefix. 1.0 kit ids start with `tck-` (its scenarios/*.feature); the 0.3 kit sends other
ids and expects the task to stay `working` so it can follow up, cancel and read history.
No deployment offers it unless asked: the conformance runner adds it
(TASKDECK_EXTRA_AGENTS=a2a.runtime.agents.tck, tests/conformance/run_kits.py) and makes it
the default skill (TASKDECK_DEFAULT_SKILL=tck); the test suite adds it in tests/settings.py.
Real delays (not scaled): the kit measures them.
"""

from __future__ import annotations

import asyncio
import uuid

from a2a.runtime.context import IDLE, AgentContext, Reply

# Its answers are immediate (the kit's delays are awaited, never busy): a blocking send's
# run executes in the web process that took it (a2a.runtime.inline).
INLINE = True

SKILL = {
    "id": "tck",
    "name": "Conformance agent",
    "description": "Scripted behaviours for the A2A TCK, chosen by message-id prefix.",
    "tags": ["conformance", "test"],
}
ARTIFACTS = {
    "tck-artifact-text": {"text": "Generated text content"},
    "tck-artifact-file": {
        "file": {"bytes": "dGNr", "name": "output.txt", "mimeType": "text/plain"}
    },
    "tck-artifact-file-url": {
        "file": {
            "uri": "https://example.com/output.txt",
            "name": "output.txt",
            "mimeType": "text/plain",
        }
    },
    "tck-artifact-data": {"data": {"key": "value", "count": 42}},
}
STREAMED = {
    "tck-stream-001": "Stream hello from TCK",
    "tck-stream-003": "Stream task lifecycle",
    "tck-stream-ordering-001": "Ordered output",
    "tck-stream-artifact-text": "Streamed text content",
}
RESUBSCRIBE_SECONDS = 11.0  # at least twice the 0.3 kit's streaming timeout (5 s in CI)


def _prefix(message_id: str, prefixes) -> str | None:
    """The longest matching prefix (the kit's generated SUTs match longest first)."""
    found = [p for p in prefixes if message_id.startswith(p)]
    return max(found, key=len) if found else None


async def run(ctx: AgentContext) -> object:
    seen = 0
    while True:
        message_id = ctx.last_user_message.get("messageId", "")
        if message_id.startswith("tck-input-required"):
            # ask again for each follow-up with this prefix; answered by tck-complete-task
            seen += 1
            await ctx.request_input(f"TCK input {seen}", explanation="Input required by TCK")
            continue
        return await _act(ctx, message_id)


async def _act(ctx: AgentContext, message_id: str) -> object:
    if message_id.startswith("test-resubscribe-message-id"):
        await ctx.step("resubscribe wait", _sleep, RESUBSCRIBE_SECONDS)
        return "Resubscribe test task done"
    if not message_id.startswith("tck-"):
        return IDLE  # the 0.3 kit's default: a task that stays working
    if message_id.startswith("tck-complete-task"):
        return "Hello from TCK"
    if message_id.startswith("tck-reject-task"):
        raise RuntimeError("rejected")
    artifact = _prefix(message_id, ARTIFACTS)
    if artifact is not None:
        await ctx.add_artifact("tck-artifact", **_artifact(ARTIFACTS[artifact]))
        return f"Done: {artifact}"
    streamed = _prefix(message_id, STREAMED)
    if streamed is not None:
        await ctx.add_artifact("tck-stream", text=STREAMED[streamed])
        return "Stream done"
    if message_id.startswith("tck-stream-artifact-chunked"):
        chunks = str(uuid.uuid5(uuid.NAMESPACE_URL, ctx.task_id))
        await ctx.add_artifact("chunks", text="chunk-1 ", artifact_id=chunks)
        await ctx.add_artifact("chunks", text="chunk-2", artifact_id=chunks, append=True)
        return "Chunked stream done"
    if message_id.startswith("tck-message-response"):
        return Reply("Direct message response")
    return f"Unhandled messageId prefix: {message_id}"


def _artifact(spec: dict) -> dict:
    if "text" in spec:
        return {"text": spec["text"]}
    if "data" in spec:
        return {"data": spec["data"]}
    return {"file": spec["file"]}


async def _sleep(seconds: float) -> bool:
    await asyncio.sleep(seconds)
    return True
