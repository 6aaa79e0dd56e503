"""Test agent: asks for two fields that are not an approval (a form, or typed JSON), then
says what it got (registered only in test workers and ACP processes)."""

from a2a.runtime.context import AgentContext

SKILL = {"id": "asker", "name": "Asker (test)", "description": "asks for a priority and a count"}
FIELDS = [
    {
        "name": "priority",
        "label": "Priority",
        "type": "enum",
        "options": ["low", "high"],
        "required": True,
    },
    {"name": "count", "label": "How many", "type": "integer", "required": True},
]


async def run(ctx: AgentContext) -> str:
    answer = await ctx.request_input("Plan the run", fields=FIELDS, explanation="Two questions.")
    return f"priority={answer['priority']}, count={answer['count']}"
