"""Forms for operator actions. They check what the dashboard itself requires (a reason,
well-formed JSON); the rules about tasks are checked by `a2a.services`, once, for every
caller."""

from __future__ import annotations

import json
import math
from typing import Any

from django import forms

from a2a import jsonsafe
from a2a.conditions import MAX_DURATION_MINUTES
from a2a.models import Suspension
from dashboard.vocabulary import BULK_ACTIONS, VERBS

REASON_HELP = "Recorded in the audit log and the task's history."
MODES = [
    (Suspension.Mode.FINISH_STEP, "Finish the current step, then stop"),
    (Suspension.Mode.INTERRUPT_IMMEDIATE, "Stop now (the step in flight reruns on resume)"),
    (Suspension.Mode.WAIT_FOR_COMPLETION, "Let this turn finish (stop at its next interaction)"),
]


def reason_field(label: str = "Reason") -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=500,
        help_text=REASON_HELP,
        error_messages={"required": "Give a reason: it is recorded with the action."},
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )


class JSONField(forms.CharField):
    """Optional JSON text; cleans to the parsed value (None when empty)."""

    def __init__(self, *, object_only: bool = False, **kw) -> None:
        self.object_only = object_only
        kw.setdefault("required", False)
        kw.setdefault("widget", forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}))
        super().__init__(**kw)

    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        if not text:
            return None
        try:
            parsed = jsonsafe.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}).") from None
        except ValueError as exc:  # NaN, Infinity, 1e400
            raise forms.ValidationError(f"Not valid JSON: {exc}.") from None
        except RecursionError:
            raise forms.ValidationError("Not valid JSON: nested too deeply.") from None
        if self.object_only and not isinstance(parsed, dict):
            raise forms.ValidationError('Must be a JSON object, e.g. {"status": "green"}.')
        if (found := jsonsafe.problem(parsed)) is not None:
            raise forms.ValidationError(f"Cannot be stored: {found.path or 'it'} {found.why}.")
        return parsed


class PauseForm(forms.Form):
    reason = reason_field()
    mode = forms.ChoiceField(choices=MODES, initial=Suspension.Mode.FINISH_STEP)
    timeout_minutes = forms.IntegerField(
        label="Auto-resume after (minutes)",
        required=False,
        min_value=1,
        max_value=MAX_DURATION_MINUTES,
        help_text="Optional: a deadline for this pause.",
    )
    on_timeout = forms.ChoiceField(
        label="At the deadline",
        choices=[("resume_with_summary", "resume"), ("fail", "fail the task")],
        initial="resume_with_summary",
        required=False,
    )


class ResumeForm(forms.Form):
    handle = forms.CharField(required=False, widget=forms.HiddenInput)
    resume_input = JSONField(
        label="Resume input (JSON, optional)",
        help_text='Handed to the agent, e.g. {"budget": 200}.',
    )
    continue_transcript = forms.BooleanField(
        label="Continue the transcript (untick for a fresh turn with a digest)",
        required=False,
        initial=True,
    )


class CancelForm(forms.Form):
    reason = reason_field()


class MessageForm(forms.Form):
    """The next message to a hosted ACP agent's session (its next prompt)."""

    text = forms.CharField(label="Your next message", max_length=10_000, strip=True)


class EmitEventForm(forms.Form):
    name = forms.CharField(label="Event name", max_length=200)
    payload = JSONField(object_only=True, label="Payload (JSON object, optional)")

    def clean_name(self) -> str:
        # CharField has stripped it and refused it empty ("required") before this runs
        name = self.cleaned_data["name"]
        if any(ch.isspace() for ch in name):
            raise forms.ValidationError("An event name has no spaces.")
        return name


class BulkForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, VERBS[a].label) for a in BULK_ACTIONS])
    scope = forms.ChoiceField(
        choices=[("selection", "selected tasks"), ("filter", "all matching the filter")]
    )
    ids = forms.MultipleChoiceField(required=False)  # choices checked against the view
    reason = reason_field()
    mode = forms.ChoiceField(choices=MODES, initial=Suspension.Mode.FINISH_STEP, required=False)
    state = forms.CharField(required=False)
    skill = forms.CharField(required=False)
    context = forms.CharField(required=False)
    q = forms.CharField(required=False)
    # the count the preview showed, posted back with the confirmation: what is acted on
    expected = forms.IntegerField(required=False, min_value=0)

    PICKS_MAX = 500  # explicit picks (a field each): the board's largest page

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        ids = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        self.fields["ids"].choices = [(i, i) for i in ids]

    def clean(self):
        data = super().clean()
        picks = data.get("ids") or []
        if data.get("scope") == "selection" and not picks:
            self.add_error("ids", "Select at least one task, or choose “all matching the filter”.")
        elif data.get("scope") == "selection" and len(picks) > self.PICKS_MAX:
            self.add_error(
                "ids",
                f"Pick at most {self.PICKS_MAX} tasks one by one, or choose “all matching the "
                "filter”: the server selects those itself, up to thousands.",
            )
        return data


class DemoForm(forms.Form):
    skill = forms.CharField()
    text = forms.CharField(required=False, max_length=2000, strip=True)


# --- answers to input requests ---------------------------------------------------------------

APPROVE, REJECT = "approve", "reject"


def refusal(form: forms.Form) -> str:
    """A refused form's errors in one line, for the audit record of the refusal."""
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())


def _number(raw: str) -> Any:
    try:
        value = float(raw)
    except ValueError:
        return raw  # the services say what is wrong with it
    if math.isfinite(value) and value.is_integer() and "." not in raw and "e" not in raw.lower():
        return int(value)
    return value if math.isfinite(value) else raw


def _integer(raw: str) -> Any:
    try:
        return int(raw)
    except ValueError:
        return raw


def answer_values(fields: list[dict[str, Any]], post) -> tuple[dict[str, Any], dict[str, list]]:
    """Turn the posted form into the request's `values` (JSON types per field). Only the
    dashboard's own rule is checked here (a rejection needs a comment); the services
    validate the values against the fields."""
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for f in fields:
        name, kind = f["name"], f.get("type")
        key = f"v.{name}"
        raw = (post.get(key) or "").strip() if kind not in ("text",) else post.get(key) or ""
        if kind == "approval":
            decision = post.get(key) or ""
            comment = (post.get(f"{key}.comment") or "").strip()
            if not decision:
                continue
            if decision == REJECT and not comment:
                errors[name] = ["Say why you reject it: a comment is required."]
            values[name] = {"decision": decision, "comment": comment}
        elif raw == "":
            continue
        elif kind == "number":
            values[name] = _number(raw)
        elif kind == "integer":
            values[name] = _integer(raw)
        elif kind == "boolean":
            values[name] = {"true": True, "false": False}.get(raw, raw)
        elif kind == "enum":
            options = f.get("options") or []
            index = _integer(raw)
            valid = isinstance(index, int) and 0 <= index < len(options)
            values[name] = options[index] if valid else raw
        else:
            values[name] = raw
        if name in values and (found := jsonsafe.problem(values[name])) is not None:
            errors[name] = [f"This value {found.why}; it cannot be stored."]
    return values, errors


# An answer's summary in the audit (its reason, and the CSV's): whole, up to the services'
# own bound on a value (a2a.input_requests.MAX_TEXT). Issue 29: a 5,000-character reject
# comment reached the agent, but the audit kept 500 characters and did not say so.
SUMMARY_CHARS = 20_000


def summarise(values: dict[str, Any]) -> str:
    out = []
    for name, value in values.items():
        if isinstance(value, dict) and "decision" in value:
            text = value["decision"] + (f": {value['comment']}" if value.get("comment") else "")
        else:
            text = json.dumps(value) if not isinstance(value, str) else value
        out.append(f"{name}={text}")
    text = "; ".join(out)
    if len(text) > SUMMARY_CHARS:  # the audit says it was cut, and how long it was
        text = f"{text[:SUMMARY_CHARS]} … [cut at {SUMMARY_CHARS:,} of {len(text):,} characters]"
    return text


class ReleaseLockoutForm(forms.Form):
    """Release a sign-in lockout (dashboard/pages/lockouts.py): a name at an address, or
    (no name) an address for every name."""

    username = forms.CharField(required=False, max_length=255)
    ip_address = forms.GenericIPAddressField(
        error_messages={"required": "Say which address.", "invalid": "Not an IP address."}
    )
    reason = reason_field()
