"""Template helpers shared by every page: state labels (the same words as static/js),
short ids and times."""

from __future__ import annotations

import json
from datetime import UTC

from django import template

register = template.Library()

STATE_LABELS = {
    "submitted": "Queued",
    "working": "Working",
    "input-required": "Needs input",
    "auth-required": "Needs sign-in",
    "paused-by-client": "Paused",
    "paused-by-agent": "Parked",
    "completed": "Completed",
    "failed": "Failed",
    "canceled": "Canceled",
    "rejected": "Rejected",
}


@register.filter
def state_label(state: str) -> str:
    return STATE_LABELS.get(state, state)


@register.filter
def short_id(value: str) -> str:
    return (value or "")[:8]


@register.filter
def iso(value) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else ""


@register.filter
def hhmm(value) -> str:
    return value.astimezone(UTC).strftime("%H:%M:%S") if value else ""


@register.filter
def timeline_group(kind: str) -> str:
    """Which timeline filter an entry kind belongs to (dashboard.timeline.GROUPS)."""
    from dashboard.timeline import GROUPS

    return GROUPS.get(kind, "other")


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def percent(progress) -> int:
    if not progress or not progress.get("total"):
        return 0
    return round(100 * progress["done"] / progress["total"])


@register.filter
def get_item(mapping, key):
    return (mapping or {}).get(key, "")


@register.filter
def intcomma_en(value) -> str:
    """1913 -> "1,913", as the board's JavaScript writes counts (toLocaleString("en"))."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)
