"""Protocol-neutral forms of core records that every door shows: a timestamp, the text of
a message, a pause. One function each, so the A2A door, the AG-UI view, the ACP door and
the dashboard can never disagree about what a pause says or how a time is written."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a.models import Suspension


def ts(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and a Z, as A2A, AG-UI and ACP examples write it."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_of(parts: list[dict[str, Any]] | None) -> str:
    """The text of a message: its text parts, one per line (data and file parts are not
    text). Parts are stored in A2A 0.3 form (`kind`)."""
    return "\n".join(
        p["text"] for p in parts or [] if p.get("kind") == "text" and isinstance(p.get("text"), str)
    ).strip()


def pause_facts(s: Suspension | None) -> dict[str, Any] | None:
    """An open (or ended) suspension as every door describes it: who paused, why, until
    when and what happens then. None for no suspension."""
    if s is None:
        return None
    timeout = (s.conditions or {}).get("timeout") or {}
    return {
        "handle": s.handle,
        "initiator": s.initiator,
        "reason": s.reason,
        "mode": s.mode or None,
        "pausedAt": ts(s.suspended_at),
        "requestedBy": s.requested_by,
        "conditions": s.conditions,
        "deadline": ts(s.deadline),
        "onTimeout": timeout.get("onTimeout") if timeout else None,
        "summary": s.summary or None,
    }
