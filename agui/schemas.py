"""JSON Schema for an input request's fields (AG-UI's `responseSchema`)."""

from __future__ import annotations

from typing import Any

_TYPES = {
    "string": {"type": "string"},
    "text": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
}
APPROVAL = {
    "oneOf": [
        {"type": "string", "enum": ["approve", "reject"]},
        {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["approve", "reject"]},
                "comment": {"type": "string"},
            },
            "required": ["decision"],
            "additionalProperties": False,
        },
    ]
}


def response_schema(request: dict[str, Any]) -> dict[str, Any]:
    fields = request.get("fields") or []
    if not fields:
        return {"type": "object"}
    properties: dict[str, Any] = {}
    for f in fields:
        kind = f["type"]
        schema = dict(APPROVAL if kind == "approval" else _TYPES.get(kind, {}))
        if kind == "enum":
            schema = {"enum": list(f.get("options") or [])}
        for src, dst in (("label", "title"), ("help", "description"), ("default", "default")):
            if src in f:
                schema[dst] = f[src]
        properties[f["name"]] = schema
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [f["name"] for f in fields if f.get("required")]
    if required:
        out["required"] = required
    return out
