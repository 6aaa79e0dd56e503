"""Demo agents: scripted, realistic flows with delays an operator can watch (no LLM).

Each module has SKILL (its agent-card entry) and `async def run(ctx)`. Their settings come
from the task's metadata (params.metadata of message/send), e.g. {"skill": "batch",
"items": 40}.
"""
