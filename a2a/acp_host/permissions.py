"""An agent's `session/request_permission` as a Taskdeck input request, and the answer back.

Options with both an allow and a reject kind become one approval field (the inbox's
Approve / Reject, with a comment); approve picks the agent's first `allow_once` option
(else its first allow option), reject its first `reject_once` (else reject) one. Any
other set of options becomes a choice (enum) of the options' names. The agent's options
travel in the request's metadata, so the answer maps back without guessing.
"""

from __future__ import annotations

from typing import Any

from acp import schema as s

from a2a.input_requests import REQUEST_TYPE


def _dump(option: Any) -> dict[str, Any]:
    return option.model_dump(mode="json", by_alias=True, exclude_none=True)


def _pick(options: list[Any], first: str, family: str) -> Any | None:
    for kind in (first, family):
        for o in options:
            if str(o.kind).startswith(kind):
                return o
    return None


def as_input_request(tool_call: Any, options: list[Any]) -> dict[str, Any]:
    action = (getattr(tool_call, "title", None) or "").strip() or "a tool call"
    title = f"Allow: {action}"[:200]
    allow = _pick(options, "allow_once", "allow")
    reject = _pick(options, "reject_once", "reject")
    if allow is not None and reject is not None:
        fields = [{"name": "decision", "label": "Decision", "type": "approval", "required": True}]
    else:
        names = [o.name for o in options]
        fields = [{"name": "option", "label": "Choose", "type": "enum", "options": names,
                   "required": True}]  # fmt: skip
    kind = getattr(tool_call, "kind", None)
    kind = f" ({kind.value if hasattr(kind, 'value') else kind})" if kind else ""
    description = (
        f"The agent asks before it runs tool call {getattr(tool_call, 'tool_call_id', '')}"
        f"{kind}. Its options: " + ", ".join(f"{o.name}" for o in options) + "."
    )
    return {
        "type": REQUEST_TYPE,
        "title": title,
        "explanation": f"May the agent go ahead with {action}?",
        "description": description,
        "fields": fields,
        "metadata": {"acp": {"permissionOptions": [_dump(o) for o in options]}},
    }


def answer_to_outcome(answered: dict[str, Any], options: list[Any]) -> Any:
    values = answered.get("values") or {}
    chosen = None
    if isinstance(values.get("decision"), dict):
        decision = values["decision"].get("decision")
        if decision == "approve":
            chosen = _pick(options, "allow_once", "allow")
        elif decision == "reject":
            chosen = _pick(options, "reject_once", "reject")
    elif "option" in values:
        chosen = next((o for o in options if o.name == values["option"]), None)
    if chosen is None:
        return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
    return s.RequestPermissionResponse(
        outcome=s.AllowedOutcome(outcome="selected", option_id=chosen.option_id)
    )
