"""A hosted session's "Always allow" and "Always reject", remembered as the agent asked.

An ACP agent that offers an `allow_always` (or `reject_always`) option asks its client to
remember the answer. Coding agents often do not remember it themselves: without a memory
here, the operator is asked again on every edit. So when the operator's answer picks such
an option (the inbox's "Remember for this session", or that option by name), it is kept on
the session's row (HostedSession.remembered: it outlives the agent's process, an idle stop
and a takeover), and the next request of the same *scope* in that session is answered with
the same kind of option — without an inbox item, with a timeline note that says so
(`remembered`, naming the request whose answer it repeats).

The scope is the tool call's kind (`edit`, `read`, `delete`, `fetch`…): "Always allow" on
an edit allows the session's later edits. Two kinds are too broad for that — `execute`
(one command allowed is not every command allowed) and `other`/none (unrelated tools) —
so for those the scope is the kind and the tool call's title (e.g. the exact command).

A request is answered from memory only when the agent offers the remembered kind again:
an agent that asks with once-only options this time is asked of a person. Allow-once and
reject-once are never remembered.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acp import schema as s

from a2a.acp_host import store
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun

ALWAYS = ("allow_always", "reject_always")
BY_TITLE = ("execute", "other", "")  # kinds whose scope is the title too
MAX_KEYS = 200  # a session remembers at most this many scopes (an agent naming each call)
KEY_CHARS = 300


def kind_of(thing: Any) -> str:
    """An option's or a tool call's kind as its wire string ("" when none)."""
    kind = getattr(thing, "kind", None)
    return str(getattr(kind, "value", kind) or "")


def key_of(tool_call: Any) -> str:
    """The scope a remembered answer covers (see the module's docstring)."""
    kind = kind_of(tool_call)
    if kind not in BY_TITLE:
        return kind
    title = " ".join((getattr(tool_call, "title", None) or "").split())
    return f"{kind or 'other'}: {title}"[:KEY_CHARS]


def scope_text(tool_call: Any) -> str:
    """The scope in words, for the operator: what "remember" will cover."""
    kind = kind_of(tool_call)
    if kind not in BY_TITLE:
        return f"{kind.replace('_', ' ')} tool calls"
    title = " ".join((getattr(tool_call, "title", None) or "").split())[:200]
    return f"the tool call “{title}”" if title else "tool calls without a kind or title"


class PermissionMemory:
    """The remembered answers of one held session (HostedRun.row.remembered)."""

    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.asked: dict[str, str] = {}  # input request id -> the scope its answer covers

    def recall(self, tool_call: Any, options: list[Any]) -> tuple[Any, dict[str, Any]] | None:
        """(the option to answer with, the memory's entry) when this request's scope is
        remembered and the agent offers that kind of option again; else None."""
        entry = (self.run.row.remembered or {}).get(key_of(tool_call))
        if not isinstance(entry, dict):
            return None
        option = next((o for o in options if kind_of(o) == entry.get("kind")), None)
        return (option, entry) if option is not None else None

    async def answer(self, tool_call: Any, options: list[Any]) -> Any | None:
        """The permission's outcome from memory (noted on the timeline), or None: ask."""
        found = self.recall(tool_call, options)
        if found is None:
            return None
        option, entry = found
        verb = "Allowed" if kind_of(option) == "allow_always" else "Rejected"
        action = (getattr(tool_call, "title", None) or "").strip() or "a tool call"
        await self.run.note(
            "remembered",
            f"{verb} from memory: {action} — the agent's “{option.name}” "
            f"({kind_of(option)}) was chosen for {entry.get('scope') or 'these requests'} "
            f"in this session, answering {entry.get('requestId') or 'an earlier request'}; "
            "nobody was asked",
        )
        return s.RequestPermissionResponse(
            outcome=s.AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    def asking(self, request_id: str, tool_call: Any) -> None:
        """An input request was made for this tool call: its answer may be remembered."""
        self.asked[request_id] = key_of(tool_call) + "\x00" + scope_text(tool_call)

    async def answered(self, request_id: str, outcome: Any, options: list[Any]) -> None:
        """The operator's answer: remembered when it picked an "always" option."""
        asked = self.asked.pop(request_id, None)
        chosen = getattr(getattr(outcome, "outcome", None), "option_id", None)
        option = next((o for o in options if o.option_id == chosen), None)
        if asked is None or option is None or kind_of(option) not in ALWAYS:
            return
        key, _, scope = asked.partition("\x00")
        row = self.run.row
        remembered = dict(row.remembered or {})
        if key not in remembered and len(remembered) >= MAX_KEYS:
            return
        remembered[key] = {
            "kind": kind_of(option),
            "requestId": request_id,
            "scope": scope,
            "at": datetime.now(UTC).isoformat(),
        }
        row.remembered = remembered
        await in_db(store.save)(row, "remembered")
