"""Domain rules the services enforce whichever door called them.

A door parses its wire shape (JSON-RPC params, an AG-UI RunAgentInput, an ACP request, a
form); the values it hands over are checked here, once, so a rule cannot be forgotten by
one door and kept by another. Every check raises ValidationFailed with a dotted path, which
each door already maps (-32602, RUN_ERROR invalid_payload, a form error), and runs before
the service writes anything.
"""

from __future__ import annotations

from typing import Any

from a2a import input_requests, jsonsafe, skills
from a2a.conditions import Conditions, parse_conditions
from a2a.errors import ContentTypeNotSupported
from a2a.models import Suspension
from a2a.validation import ValidationFailed

MAX_REASON = 2000  # a pause, park, cancel or failure reason
MAX_SUMMARY = 20_000
MAX_TEXT = 200_000  # one text part
MAX_PARTS = 100
MAX_ID = 128
PART_KINDS = ("text", "data", "file")


def storable(value: Any, field: str) -> Any:
    """`value` if the database can store it (no NUL, lone surrogate, non-finite number,
    64-bit overflow or nesting past 64 levels)."""
    found = jsonsafe.problem(value)
    if found is not None:
        path = f"{field}.{found.path}" if found.path else field
        raise ValidationFailed({path: [found.why]})
    return value


def text(value: Any, field: str, *, limit: int, blank: bool = True) -> str:
    if not isinstance(value, str):
        raise ValidationFailed({field: ["must be a string"]})
    if len(value) > limit:
        raise ValidationFailed({field: [f"must be at most {limit} characters"]})
    if not blank and not value.strip():
        raise ValidationFailed({field: ["must not be blank"]})
    return storable(value, field)


def reason(value: Any, field: str = "reason", *, blank: bool = True) -> str:
    return text(value, field, limit=MAX_REASON, blank=blank)


def mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed({field: ["must be an object"]})
    return storable(value, field)


def skill(value: Any) -> str:
    """A skill this Taskdeck offers (`a2a.skills`)."""
    offered = skills.ids()
    if not isinstance(value, str) or value not in offered:
        raise ValidationFailed(
            {"skill": [f"unknown skill; this agent offers: {', '.join(sorted(offered))}"]}
        )
    return value


def mode(value: Any) -> str:
    if value not in Suspension.Mode.values:
        raise ValidationFailed({"mode": [f"must be one of {', '.join(Suspension.Mode.values)}"]})
    return value


def conditions(value: Conditions | dict[str, Any] | None, field: str) -> Conditions:
    """Resume conditions, parsed when a door passes their JSON form."""
    if value is None:
        return Conditions()
    if isinstance(value, Conditions):
        return value
    storable(value, field)
    try:
        return parse_conditions(value)
    except ValidationFailed as exc:
        raise exc.prefixed(field) from None


def parts(value: Any, field: str = "message.parts") -> list[dict[str, Any]]:
    """Message parts in the stored (A2A 0.3) form: text, data or file."""
    if not isinstance(value, list) or not value:
        raise ValidationFailed({field: ["must be a non-empty list of parts"]})
    if len(value) > MAX_PARTS:
        raise ValidationFailed({field: [f"must hold at most {MAX_PARTS} parts"]})
    for i, part in enumerate(value):
        where = f"{field}.{i}"
        if not isinstance(part, dict) or part.get("kind") not in PART_KINDS:
            raise ValidationFailed({f"{where}.kind": ['must be "text", "data" or "file"']})
        if part["kind"] == "text":
            text(part.get("text"), f"{where}.text", limit=MAX_TEXT)
        elif part["kind"] == "data" and not isinstance(part.get("data"), dict):
            raise ValidationFailed({f"{where}.data": ["must be an object"]})
        elif part["kind"] == "file" and not isinstance(part.get("file"), dict):
            raise ValidationFailed({f"{where}.file": ["must be an object"]})
        media, media_field = _declared_media_type(part, where)
        if media is not None and not isinstance(media, str):
            raise ValidationFailed({media_field: ["must be a string"]})
    return storable(value, field)


# What a part is when it does not say (text parts are text, data parts JSON); a file part
# that names no media type is not judged (A2A refuses a media type *provided*).
_IMPLIED = {"text": "text/plain", "data": "application/json"}


def _declared_media_type(part: dict[str, Any], where: str) -> tuple[Any, str]:
    """The media type a part states, and where: `mediaType` on a text or data part (A2A
    1.0 allows it on every part), `file.mimeType` on a file part."""
    if part["kind"] == "file":
        return part["file"].get("mimeType"), f"{where}.file.mimeType"
    return part.get("mediaType"), f"{where}.mediaType"


def _essence(media_type: str) -> str:
    """`type/subtype`, lower case, without parameters (`; charset=utf-8`)."""
    return media_type.split(";", 1)[0].strip().lower()


def _accepts(modes: list[str], media_type: str) -> bool:
    """Does one of `modes` (media types, `type/*` or `*/*`) take `media_type`?"""
    kind = _essence(media_type)
    major = kind.split("/", 1)[0]
    for mode in modes:
        mode = _essence(mode)
        if mode in (kind, "*/*", "*") or mode == f"{major}/*":
            return True
    return False


def content_types(parts: list[dict[str, Any]], skill_id: str, field: str = "message.parts") -> None:
    """Every part's media type is one the skill accepts (`a2a.skills.input_modes`), or
    ContentTypeNotSupported naming the first that is not: before anything is written, so
    a refused message leaves no trace. Run after `parts` (the shapes are checked)."""
    modes = skills.input_modes(skill_id)
    for i, part in enumerate(parts):
        # named by the part, not its key: a 1.0 client said `mediaType`, a 0.3 one
        # `file.mimeType`, and the stored form is the 0.3 one
        media, _ = _declared_media_type(part, "")
        media = media or _IMPLIED.get(part["kind"])
        if media is not None and not _accepts(modes, media):
            raise ContentTypeNotSupported(f"{field}.{i}", media, modes)


def identifier(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise ValidationFailed({field: [f"must be a non-empty string of at most {MAX_ID}"]})
    return storable(value, field)


def resume_input_spec(metadata: dict[str, Any]) -> dict[str, Any]:
    """A pause's `metadata.resumeInput` — what input the pausing side expects back, as
    `{"fields": [...]}` in the input requests' field shape (docs/design/input-requests.md,
    D40) — checked and made canonical; `metadata` unchanged when it has none. Dashboards
    draw a typed resume form from it; a resume that brings input is validated against it
    (resume_input)."""
    if "resumeInput" not in metadata:
        return metadata
    spec = metadata["resumeInput"]
    if not isinstance(spec, dict) or set(spec) - {"fields"} or "fields" not in spec:
        raise ValidationFailed({"metadata.resumeInput": ['must be {"fields": [...]}']})
    try:
        parsed = input_requests.parse_request({"requestId": "resume", "fields": spec["fields"]})
    except ValidationFailed as exc:
        raise ValidationFailed(
            {f"metadata.resumeInput.{k}".rstrip("."): v for k, v in exc.errors.items()}
        ) from None
    return {**metadata, "resumeInput": {"fields": parsed["fields"]}}


def resume_input(spec: dict[str, Any] | None, value: Any) -> Any:
    """Resume input checked against the pause's declared fields (resume_input_spec), like
    an answer to an input request: unknown fields, wrong types and missing required ones
    are refused under `input.<field>`; defaults are filled in. No spec: any input."""
    fields = (spec or {}).get("fields")
    if not fields or value is None:
        return value
    try:
        return input_requests.validate_values({"fields": fields}, value)
    except ValidationFailed as exc:
        renamed = {("input" + k[len("values") :]): v for k, v in exc.errors.items()}
        raise ValidationFailed(renamed) from None


def preset_fits(metadata: dict[str, Any], conditions: Conditions, field: str) -> None:
    """A timeout's preset input (`resume_with_input`) must pass the pause's own declared
    fields: checked when the pause opens, never when the deadline fires it (a refusal
    then would leave the task paused past its deadline)."""
    if conditions.on_timeout != "resume_with_input":
        return
    try:
        resume_input(metadata.get("resumeInput"), conditions.timeout_input)
    except ValidationFailed as exc:
        prefix = f"{field}.timeout."
        raise ValidationFailed({prefix + k: v for k, v in exc.errors.items()}) from None
