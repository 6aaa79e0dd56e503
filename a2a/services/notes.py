"""Timeline facts that change no state: a hosted agent's tool calls, and what its host saw
happen to the agent's process. Both are events like any other (the audit, the timeline,
the AG-UI view's version), written under the task's lock."""

from __future__ import annotations

from django.db import transaction

from a2a.errors import ValidationFailed
from a2a.event_kinds import EventKind
from a2a.lifecycle import TERMINAL
from a2a.models import Task
from a2a.services import checks
from a2a.services._core import Actor, lock, now, record

TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch",
              "switch_mode", "other")  # fmt: skip
TOOL_STATUSES = ("pending", "in_progress", "completed", "failed")
HOST_NOTES = ("exited", "turn_lost", "takeover", "refused", "stalled", "output_limit",
              "garbage", "new_session", "cancelled_turn", "asked_again", "idle_stopped",
              "woken", "remembered")  # fmt: skip
CONTENT_CHARS = 2_000


def note_tool_call(
    task_id: str,
    *,
    actor: Actor,
    tool_call_id: str,
    title: str = "",
    kind: str = "",
    status: str = "",
    content: str = "",
    update: bool = False,
) -> Task | None:
    """An agent's tool call (or, `update`, an update of one it announced) on the task's
    timeline. Nothing is written for a task that has ended (a late update of a cancelled
    turn)."""
    checks.identifier(tool_call_id, "toolCallId")
    checks.text(title, "title", limit=500)
    if kind and kind not in TOOL_KINDS:
        raise ValidationFailed({"kind": [f"must be one of {', '.join(TOOL_KINDS)}"]})
    if status and status not in TOOL_STATUSES:
        raise ValidationFailed({"status": [f"must be one of {', '.join(TOOL_STATUSES)}"]})
    data = {"toolCallId": tool_call_id, "title": title, "kind": kind, "status": status}
    if content:
        data["content"] = content[:CONTENT_CHARS]
    if update:
        data["update"] = True
    with transaction.atomic():
        task = lock(task_id, actor)
        if task.state in TERMINAL:
            return None
        record(task, EventKind.TOOL_CALL, actor, now(), reason=title, data=data)
    return task


def note_host(task_id: str, *, actor: Actor, what: str, detail: str) -> Task | None:
    """What the host of an agent saw (its process exited, a turn was cut off, another
    supervisor took the session over...): the operator reads it on the timeline."""
    if what not in HOST_NOTES:
        raise ValidationFailed({"what": [f"must be one of {', '.join(HOST_NOTES)}"]})
    checks.text(detail, "detail", limit=checks.MAX_SUMMARY)
    with transaction.atomic():
        task = lock(task_id, actor)
        record(task, EventKind.HOST_NOTE, actor, now(), reason=detail[:500],
               data={"what": what, "detail": detail})  # fmt: skip
    return task
