"""An agent's `session/request_permission` as a Taskdeck input request, and the answer back.

Options with both an allow and a reject kind become one approval field (the inbox's
Approve / Reject, with a comment); approve picks the agent's first `allow_once` option
(else its first allow option), reject its first `reject_once` (else reject) one. When the
agent also offers `allow_always` or `reject_always`, a second field, "Remember for this
session" (a boolean, not required: a typed "approve" still answers), picks the "always"
option of the decision's family instead — which the host then remembers
(a2a.acp_host.permission_memory). Before, the approval collapsed "Always allow" into
allow-once, and a coding agent re-asked on every edit. Any other set of options becomes a
choice (enum) of the options' names (an "always" option chosen there is remembered too).
The agent's options travel in the request's metadata, so the answer maps back without
guessing.
"""

from __future__ import annotations

from typing import Any

from acp import schema as s

from a2a.acp_host.permission_memory import kind_of, scope_text
from a2a.input_requests import REQUEST_TYPE

REMEMBER = "remember"  # the approval's companion field (when the agent offers "always")


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
        always = [o for o in options if kind_of(o) in ("allow_always", "reject_always")]
        if always:
            fields.append(_remember_field(tool_call, always))
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


def _remember_field(tool_call: Any, always: list[Any]) -> dict[str, Any]:
    names = " / ".join(f"“{o.name}”" for o in always)
    return {
        "name": REMEMBER,
        "label": "Remember for this session",
        "type": "boolean",
        "required": False,
        "default": False,
        "help": f"Yes picks the agent's {names}: later requests for {scope_text(tool_call)} "
        "in this task's session get the same answer without asking.",
    }


def answer_to_outcome(answered: dict[str, Any], options: list[Any]) -> Any:
    values = answered.get("values") or {}
    chosen = None
    if isinstance(values.get("decision"), dict):
        decision = values["decision"].get("decision")
        once = "always" if values.get(REMEMBER) is True else "once"
        if decision == "approve":
            chosen = _pick(options, f"allow_{once}", "allow")
        elif decision == "reject":
            chosen = _pick(options, f"reject_{once}", "reject")
    elif "option" in values:
        chosen = next((o for o in options if o.name == values["option"]), None)
    if chosen is None:
        return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
    return s.RequestPermissionResponse(
        outcome=s.AllowedOutcome(outcome="selected", option_id=chosen.option_id)
    )
