"""A call's gRPC metadata as the service parameters `a2a.protocol.calls.decide` reads.

HTTP headers and gRPC metadata carry the same A2A service parameters (A2A-Version,
A2A-Extensions, Last-Event-ID) and the caller's `authorization`; metadata keys arrive in
lower case, the core asks in HTTP's spelling, so lookups ignore case as HTTP headers do.
gRPC is a 1.0-only binding here: a call without `a2a-version` is a 1.0 call (an explicit
other version is still refused by `decide`, VERSION_NOT_SUPPORTED).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

DEFAULT_VERSION = "1.0"


class ServiceParameters(Mapping[str, str]):
    """Case-insensitive; a key sent more than once reads as its values joined by ", " (as
    HTTP folds repeated headers). Binary (`-bin`) entries are not service parameters."""

    def __init__(self, metadata: Iterable[tuple[str, Any]] | None) -> None:
        values: dict[str, list[str]] = {}
        for key, value in metadata or ():
            if key.endswith("-bin") or not isinstance(value, str):
                continue
            values.setdefault(key.lower(), []).append(value)
        self._values = {key: ", ".join(v) for key, v in values.items()}
        if not self._values.get("a2a-version", "").strip():
            self._values["a2a-version"] = DEFAULT_VERSION

    def __getitem__(self, key: str) -> str:
        return self._values[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
