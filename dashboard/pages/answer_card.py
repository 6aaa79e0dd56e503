"""The answer card: one pending input request as a form generated from its fields, drawn
by the inbox, the task page and the guided demo alike (and again, with the errors beside
their fields, after a refused answer)."""

from __future__ import annotations

from typing import Any

from dashboard import context as decision_context
from dashboard import selectors


def field_views(
    iid: str, fields: list[dict[str, Any]], posted=None, errors=None
) -> list[dict[str, Any]]:
    """What the template needs to draw one input per field (and its error beside it)."""
    out = []
    errors = errors or {}
    for f in fields:
        name, kind = f["name"], f.get("type", "string")
        key = f"v.{name}"
        value = posted.get(key, "") if posted is not None else ""
        if posted is None and "default" in f:
            default = f["default"]
            if kind == "enum":
                options = f.get("options") or []
                value = str(options.index(default)) if default in options else ""
            elif kind == "boolean":
                value = "true" if default else "false"
            elif kind == "approval":
                value = default if isinstance(default, str) else default.get("decision", "")
            else:
                value = str(default)
        out.append(
            {
                "name": name,
                "key": key,
                "id": f"f-{iid}-{name}",
                "label": f.get("label") or name.replace("_", " ").capitalize(),
                "type": kind,
                "required": bool(f.get("required")),
                "help": f.get("help") or "",
                "options": [(str(i), str(o)) for i, o in enumerate(f.get("options") or [])],
                "value": value,
                "comment": posted.get(f"{key}.comment", "") if posted is not None else "",
                "errors": errors.get(name, []),
            }
        )
    return out


def card(
    interrupt,
    next_url: str,
    posted=None,
    errors=None,
    title: str | None = None,
    context: decision_context.Context | None = None,
) -> dict[str, Any]:
    """One answer card. `title` is the task's title when the caller has it already (the
    inbox reads all of them in one query); otherwise it is looked up, so every card (inbox,
    task page, demo, and each of them after a refused answer) names the task the same way."""
    content = interrupt.content or {}
    request = content.get("request") or {}
    fields = list(request.get("fields") or [])
    return {
        "interrupt": interrupt,
        "task": interrupt.task,
        "content": content,
        "request": request,
        "fields": field_views(interrupt.interrupt_id, fields, posted, errors),
        "has_approval": any(f.get("type") == "approval" for f in fields),
        "free_text": not fields,
        "answer_text": posted.get("v.__text__", "") if posted is not None else "",
        "errors": (errors or {}).get("__all__", []),
        "next": next_url,
        "title": selectors.task_title(interrupt.task_id) if title is None else title,
        # the inbox's: what it asks to approve and what led there (dashboard/context.py)
        "context": context,
    }
