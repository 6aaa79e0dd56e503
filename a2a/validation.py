"""A small error type shared by the pure validators (conditions, input requests).

Errors are collected as {dotted.path: [messages]} so every transport can name the bad field.
"""

from __future__ import annotations

import math


class ValidationFailed(Exception):
    """Input did not validate. `errors` maps a dotted field path to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        first = next(iter(errors.items()), ("", [""]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else first[1][0])

    def renamed(self, names: dict[str, str]) -> ValidationFailed:
        """The same errors with top-level paths renamed, for a door whose wire names a
        value differently (the service's `skill` is A2A's `metadata.skill`)."""
        return ValidationFailed({names.get(k, k): v for k, v in self.errors.items()})

    def prefixed(self, prefix: str) -> ValidationFailed:
        """The same errors under `prefix` (e.g. "conditions" -> "conditions.timeout")."""
        return ValidationFailed(
            {f"{prefix}.{k}" if k else prefix: v for k, v in self.errors.items()}
        )


def is_int(value: object) -> bool:
    """True for real integers; JSON booleans are not numbers here."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """True for finite JSON numbers (NaN and Infinity are not JSON)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def json_equal(a: object, b: object) -> bool:
    """Equality as JSON sees it: `true` is not `1` and `false` is not `0`, at any depth
    (Python's == says they are)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b
