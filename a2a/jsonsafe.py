"""JSON that the database can store: what every entry point checks before a write.

Valid JSON is not always storable. PostgreSQL's jsonb and text refuse NUL characters
and unpaired surrogates (SQLite stores them), Python's json module reads 1e400 as
infinity, which neither database accepts and no JSON encoder can write back, and an
integer past 64 bits overflows the moment it meets a query. Without a
check these reach an INSERT and come back as a 500. Every way in (JSON-RPC, POST
/api/events, AG-UI runs, dashboard forms) refuses them up front instead, with an error
that names the place, and changes nothing.

Deep nesting is refused here too: code that walks a value recursively (wire10.camelize,
serializers, the AG-UI models) must never meet a RecursionError.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64  # no A2A or AG-UI message needs more; Python recursion needs far less
# Integers a database column or query parameter can hold (historyLength, event ids, …);
# larger ones overflow in SQL rather than failing validation.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class Unstorable(ValueError):
    """Why a JSON value cannot be stored, and where (a dotted path, '' for the top)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}" if path else why)
        self.path = path
        self.why = why


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(data: str | bytes) -> Any:
    """json.loads that refuses NaN/Infinity and numbers beyond a double's range.

    Raises ValueError (json.JSONDecodeError is one) or RecursionError, like json.loads.
    """
    return json.loads(data, parse_constant=_no_constant, parse_float=_finite)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (\\ud800-\\udfff)"
    return None


def problem(value: Any, *, max_depth: int = MAX_DEPTH) -> Unstorable | None:
    """The first reason `value` cannot be stored, or None. Iterative, so any depth of
    input is safe to ask about."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if why := _text_problem(item):
                return Unstorable(path, why)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Unstorable(path, "is a number too large for JSON")
        elif isinstance(item, int) and not isinstance(item, bool):
            if not INT_MIN <= item <= INT_MAX:
                return Unstorable(path, "is an integer beyond 64 bits")
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                return Unstorable(path, f"is nested deeper than {max_depth} levels")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in reversed(list(pairs)):
                if isinstance(key, str) and (why := _text_problem(key)):
                    return Unstorable(path, f"has a key that {why}")
                child_path = f"{path}.{key}" if path else str(key)
                stack.append((child, child_path, depth + 1))
    return None


def check(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`value` itself, or raises Unstorable."""
    if (found := problem(value, max_depth=max_depth)) is not None:
        raise found
    return value
