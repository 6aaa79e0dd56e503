"""Resume conditions: parse and validate, match an incoming event, compute a deadline.

Shape (docs/design/a2a-surface.md, D26, after Harn's parse_resume_conditions; unknown keys refused):

    {"onEvent": "ci.build.completed:1234",
     "trigger": {"event": "deploy.finished", "match": {"env": "prod"}},
     "timeout": {"durationMinutes": 30,
                 "onTimeout": "fail" | "resume_with_summary" | "resume_with_input",
                 "input": <any, required for resume_with_input>}}

Pure Python: the scheduler, the JSON-RPC layer and the dashboard all call the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from a2a.validation import ValidationFailed, is_int, json_equal

ON_TIMEOUT = ("fail", "resume_with_summary", "resume_with_input")
_TOP_KEYS = {"onEvent", "trigger", "timeout"}
_TRIGGER_KEYS = {"event", "match"}
_TIMEOUT_KEYS = {"durationMinutes", "onTimeout", "input"}
MAX_DURATION_MINUTES = 60 * 24 * 366  # a year and a day: anything longer is a typo


@dataclass(frozen=True)
class Conditions:
    """Validated resume conditions; `as_dict()` is the canonical stored form."""

    on_event: str | None = None
    trigger: dict[str, Any] | None = None
    duration_minutes: int | None = None
    on_timeout: str = "fail"
    timeout_input: Any = None

    def as_dict(self) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        if self.on_event is not None:
            out["onEvent"] = self.on_event
        if self.trigger is not None:
            out["trigger"] = self.trigger
        if self.duration_minutes is not None:
            timeout: dict[str, Any] = {
                "durationMinutes": self.duration_minutes,
                "onTimeout": self.on_timeout,
            }
            if self.on_timeout == "resume_with_input":
                timeout["input"] = self.timeout_input
            out["timeout"] = timeout
        return out or None

    def deadline(self, start: datetime) -> datetime | None:
        if self.duration_minutes is None:
            return None
        return start + timedelta(minutes=self.duration_minutes)


def _event_name(value: Any, path: str, errors: dict[str, list[str]]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        errors[path] = ["must be a non-empty string"]
        return None
    if any(ch.isspace() for ch in value):
        errors[path] = ["must not contain spaces"]
        return None
    if len(value) > 200:
        errors[path] = ["must be at most 200 characters"]
        return None
    return value


def _unknown(keys: set[str], allowed: set[str], prefix: str, errors: dict[str, list[str]]):
    for key in sorted(keys - allowed):
        errors[f"{prefix}{key}"] = ["unknown field"]


def parse_conditions(raw: Any) -> Conditions:
    """Validate `raw` (the JSON value of `conditions` / `resumeWhen`); raise
    ValidationFailed with paths relative to it. `None` and `{}` mean "no conditions"."""
    if raw is None:
        return Conditions()
    if not isinstance(raw, dict):
        raise ValidationFailed({"": ["must be an object"]})
    errors: dict[str, list[str]] = {}
    _unknown(set(raw), _TOP_KEYS, "", errors)

    on_event = None
    if "onEvent" in raw:
        on_event = _event_name(raw["onEvent"], "onEvent", errors)

    trigger = None
    if "trigger" in raw:
        t = raw["trigger"]
        if not isinstance(t, dict):
            errors["trigger"] = ["must be an object"]
        else:
            _unknown(set(t), _TRIGGER_KEYS, "trigger.", errors)
            if "event" not in t:
                errors["trigger.event"] = ["this field is required"]
            event = _event_name(t.get("event"), "trigger.event", errors) if "event" in t else None
            match = t.get("match", {})
            if not isinstance(match, dict):
                errors["trigger.match"] = ["must be an object of field: value"]
            elif any(not k for k in match):
                errors["trigger.match"] = ["field names must be non-empty"]
            if event and isinstance(match, dict):
                trigger = {"event": event, "match": match}

    duration = None
    on_timeout = "fail"
    timeout_input = None
    if "timeout" in raw:
        t = raw["timeout"]
        if not isinstance(t, dict):
            errors["timeout"] = ["must be an object"]
        else:
            _unknown(set(t), _TIMEOUT_KEYS, "timeout.", errors)
            d = t.get("durationMinutes")
            if "durationMinutes" not in t:
                errors["timeout.durationMinutes"] = ["this field is required"]
            elif not is_int(d) or d <= 0:
                errors["timeout.durationMinutes"] = ["must be an integer greater than 0"]
            elif d > MAX_DURATION_MINUTES:
                errors["timeout.durationMinutes"] = [
                    f"must be at most {MAX_DURATION_MINUTES} (a year)"
                ]
            else:
                duration = d
            on_timeout = t.get("onTimeout", "fail")
            if on_timeout not in ON_TIMEOUT:
                errors["timeout.onTimeout"] = [f"must be one of {', '.join(ON_TIMEOUT)}"]
            if on_timeout == "resume_with_input" and "input" not in t:
                errors["timeout.input"] = ["is required when onTimeout is resume_with_input"]
            if on_timeout != "resume_with_input" and "input" in t:
                errors["timeout.input"] = ["is only allowed with onTimeout resume_with_input"]
            timeout_input = t.get("input")

    if errors:
        raise ValidationFailed(errors)
    return Conditions(
        on_event=on_event,
        trigger=trigger,
        duration_minutes=duration,
        on_timeout=on_timeout,
        timeout_input=timeout_input,
    )


def _lookup(payload: Any, dotted: str) -> tuple[bool, Any]:
    current = payload
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            return False, None
        current = current[part]
    return True, current


def event_wakes(conditions: dict[str, Any] | None, name: str, payload: Any) -> str | None:
    """Which condition an incoming event satisfies: "onEvent", "trigger" or None.

    `conditions` is the stored canonical form (Conditions.as_dict()).
    """
    if not conditions:
        return None
    if conditions.get("onEvent") == name:
        return "onEvent"
    trigger = conditions.get("trigger")
    if trigger and trigger.get("event") == name:
        for field, expected in (trigger.get("match") or {}).items():
            found, value = _lookup(payload, field)
            if not found or not json_equal(value, expected):
                return None
        return "trigger"
    return None
