"""Structured input requests and the validation of their answers (docs/design/input-requests.md).

An agent asks with a DataPart {type: "a2a.input.request", requestId, title?, description?,
fields?, metadata?}; the answer is a DataPart {type: "a2a.input.response", requestId,
values, metadata?}. Answers are validated here *before* the task moves back to work, so a
bad answer is refused and the task keeps waiting (Prefect's failure mode is the one to avoid).
"""

from __future__ import annotations

from typing import Any

from a2a import jsonsafe
from a2a.validation import ValidationFailed, is_int, is_number, json_equal

REQUEST_TYPE = "a2a.input.request"
RESPONSE_TYPE = "a2a.input.response"
FIELD_TYPES = ("string", "text", "number", "integer", "boolean", "enum", "approval")
APPROVAL_DECISIONS = ("approve", "reject")
_FIELD_KEYS = {
    "name", "label", "type", "required", "options", "default", "help", "minimum", "maximum",
}  # fmt: skip
BOUNDS = ("minimum", "maximum")  # number and integer fields: inclusive limits
_REQUEST_KEYS = {"type", "requestId", "title", "description", "fields", "metadata"}
MAX_TEXT = 20_000


def _check_value(field: dict[str, Any], value: Any) -> tuple[Any, str | None]:
    """(cleaned value, error message or None) for one field."""
    kind = field["type"]
    if kind in ("string", "text"):
        if not isinstance(value, str):
            return None, "must be a string"
        if kind == "string" and "\n" in value:
            return None, "must be a single line"
        if len(value) > MAX_TEXT:
            return None, f"must be at most {MAX_TEXT} characters"
        return value, None
    if kind in ("number", "integer"):
        if not (is_number(value) if kind == "number" else is_int(value)):
            return None, f"must be {'a number' if kind == 'number' else 'an integer'}"
        return _in_bounds(field, value)
    if kind == "boolean":
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")
    if kind == "enum":
        options = field.get("options") or []
        if not any(json_equal(value, option) for option in options):
            return None, "must be one of: " + ", ".join(map(str, options))
        return value, None
    # approval: "approve" | "reject" | {"decision": ..., "comment"?: str}
    if isinstance(value, str):
        value = {"decision": value}
    if not isinstance(value, dict) or set(value) - {"decision", "comment"}:
        return None, 'must be "approve", "reject" or {"decision", "comment"}'
    if value.get("decision") not in APPROVAL_DECISIONS:
        return None, 'decision must be "approve" or "reject"'
    comment = value.get("comment", "")
    if not isinstance(comment, str) or len(comment) > MAX_TEXT:
        return None, "comment must be a string"
    return {"decision": value["decision"], "comment": comment}, None


def _in_bounds(field: dict[str, Any], value: Any) -> tuple[Any, str | None]:
    """A number within the field's declared minimum and maximum (issue 29: a budget of
    -50 was accepted)."""
    low, high = field.get("minimum"), field.get("maximum")
    if low is not None and value < low:
        return None, f"must be at least {low}"
    if high is not None and value > high:
        return None, f"must be at most {high}"
    return value, None


def parse_request(raw: Any) -> dict[str, Any]:
    """Validate an agent's input request; return its canonical form."""
    if not isinstance(raw, dict):
        raise ValidationFailed({"": ["must be an object"]})
    errors: dict[str, list[str]] = {}
    for key in sorted(set(raw) - _REQUEST_KEYS):
        errors[key] = ["unknown field"]
    if not isinstance(raw.get("requestId"), str) or not raw.get("requestId"):
        errors["requestId"] = ["must be a non-empty string"]
    for key in ("title", "description"):
        if key in raw and not isinstance(raw[key], str):
            errors[key] = ["must be a string"]
    fields = raw.get("fields", [])
    if not isinstance(fields, list):
        errors["fields"] = ["must be a list"]
        fields = []
    seen: set[str] = set()
    clean_fields = []
    for i, f in enumerate(fields):
        p = f"fields.{i}"
        if not isinstance(f, dict):
            errors[p] = ["must be an object"]
            continue
        for key in sorted(set(f) - _FIELD_KEYS):
            errors[f"{p}.{key}"] = ["unknown field"]
        name = f.get("name")
        if not isinstance(name, str) or not name:
            errors[f"{p}.name"] = ["must be a non-empty string"]
        elif name in seen:
            errors[f"{p}.name"] = ["duplicate field name"]
        else:
            seen.add(name)
        if f.get("type") not in FIELD_TYPES:
            errors[f"{p}.type"] = ["must be one of: " + ", ".join(FIELD_TYPES)]
        if f.get("type") == "enum" and (
            not isinstance(f.get("options"), list) or not f.get("options")
        ):
            errors[f"{p}.options"] = ["an enum field needs a non-empty list of options"]
        for bound in BOUNDS:
            if bound not in f:
                continue
            if f.get("type") not in ("number", "integer"):
                errors[f"{p}.{bound}"] = ["only number and integer fields have bounds"]
            elif not is_number(f[bound]):
                errors[f"{p}.{bound}"] = ["must be a number"]
        if "required" in f and not isinstance(f["required"], bool):
            errors[f"{p}.required"] = ["must be true or false"]
        if not any(k.startswith(p) for k in errors) and "default" in f:
            _, err = _check_value(f, f["default"])
            if err:
                errors[f"{p}.default"] = [err]
        clean_fields.append(f)
    if errors:
        raise ValidationFailed(errors)
    out = {k: v for k, v in raw.items() if k in _REQUEST_KEYS}
    out["type"] = REQUEST_TYPE
    out["fields"] = clean_fields
    return out


def validate_values(request: dict[str, Any], values: Any) -> dict[str, Any]:
    """Check an answer's `values` against the request's fields; return cleaned values
    (defaults filled in). Paths in errors are `values.<field>`."""
    if not isinstance(values, dict):
        raise ValidationFailed({"values": ["must be an object of field name: value"]})
    fields = {f["name"]: f for f in request.get("fields") or []}
    errors: dict[str, list[str]] = {}
    cleaned: dict[str, Any] = {}
    if fields:
        for key in sorted(set(values) - set(fields)):
            errors[f"values.{key}"] = ["unknown field"]
    else:
        cleaned.update(values)  # a request without fields takes any values
    for name, field in fields.items():
        if name not in values or values[name] is None or values[name] == "":
            if "default" in field:
                cleaned[name] = field["default"]
            elif field.get("required"):
                errors[f"values.{name}"] = ["this field is required"]
            continue
        value, err = _check_value(field, values[name])
        if err:
            errors[f"values.{name}"] = [err]
        else:
            cleaned[name] = value
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def find_data_part_index(parts: list[dict[str, Any]], type_: str) -> int | None:
    """The index of the first DataPart whose data.type is `type_`."""
    for i, part in enumerate(parts):
        data = part.get("data") if part.get("kind") == "data" else None
        if isinstance(data, dict) and data.get("type") == type_:
            return i
    return None


def find_data_part(parts: list[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    """The data of the first DataPart whose data.type is `type_`."""
    index = find_data_part_index(parts, type_)
    return None if index is None else parts[index]["data"]


def decision_of(request: dict[str, Any], values: dict[str, Any]) -> str:
    """ "approved" / "rejected" when the request holds an approval field, else "provided"."""
    for field in request.get("fields") or []:
        if field.get("type") == "approval" and isinstance(values.get(field["name"]), dict):
            return "approved" if values[field["name"]]["decision"] == "approve" else "rejected"
    return "provided"


_YES = {"yes", "y", "true", "1", "on"}
_DECISION_WORDS = {"approve": "approve", "approved": "approve", "yes": "approve", "ok": "approve",
                   "reject": "reject", "rejected": "reject", "no": "reject"}  # fmt: skip
_NO = {"no", "n", "false", "0", "off"}


def values_from_text(request: dict[str, Any], text: str) -> dict[str, Any]:
    """The values a plain-text answer gives, for clients that can only type (an editor's
    prompt box, a chat): a request without fields takes any text; a request with exactly
    one field — or exactly one required field, the others optional with a declared
    default (a hosted agent's permission with its "Remember for this session") — takes
    the text as that field's value ("approve: looks good" for an approval, "yes"/"no" for
    a boolean, a number, one of the options). Several fields without a default need a
    structured answer. The result still goes through `validate_values`."""
    fields = request.get("fields") or []
    if not fields:
        return {}
    if text.lstrip().startswith("{"):  # typed JSON: the values of every field at once
        try:
            values = jsonsafe.loads(text)
        except (ValueError, RecursionError):
            values = None
        if isinstance(values, dict):
            return values
    required = [f for f in fields if f.get("required")]
    others = [f for f in fields if not f.get("required")]
    if len(fields) != 1 and len(required) == 1 and all("default" in f for f in others):
        fields = required  # the optional ones take their declared defaults
    if len(fields) != 1:
        names = ", ".join(f["name"] for f in fields)
        why = f"this request has {len(fields)} fields ({names}); answer with a DataPart of "
        raise ValidationFailed({"": [why + f"type {RESPONSE_TYPE}"]})
    field = fields[0]
    kind, value = field["type"], text.strip()
    converted: Any = value
    if kind == "text":
        converted = text
    elif kind == "number":
        try:
            converted = float(value)
        except ValueError:
            converted = value  # validate_values names the problem
    elif kind == "integer":
        converted = int(value) if value.lstrip("+-").isdigit() and len(value) < 19 else value
    elif kind == "boolean":
        low = value.lower()
        converted = True if low in _YES else False if low in _NO else value
    elif kind == "enum":
        options = field.get("options") or []
        converted = next((o for o in options if str(o) == value), value)
    elif kind == "approval":
        head, _, comment = value.partition(":") if ":" in value else value.partition(" ")
        decision = _DECISION_WORDS.get(head.strip().lower(), head.strip())
        converted = {"decision": decision, "comment": comment.strip()}
    return {field["name"]: converted}
