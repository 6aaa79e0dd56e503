"""A small error type shared by the pure validators (conditions, input requests).

Errors are collected as {dotted.path: [messages]} so every transport can name the bad field.
"""

from __future__ import annotations


class ValidationFailed(Exception):
    """Input did not validate. `errors` maps a dotted field path to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        first = next(iter(errors.items()), ("", [""]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else first[1][0])

    def prefixed(self, prefix: str) -> ValidationFailed:
        """The same errors under `prefix` (e.g. "conditions" -> "conditions.timeout")."""
        return ValidationFailed(
            {f"{prefix}.{k}" if k else prefix: v for k, v in self.errors.items()}
        )


def is_int(value: object) -> bool:
    """True for real integers; JSON booleans are not numbers here."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
