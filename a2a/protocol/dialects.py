"""Which pause dialect a request speaks (docs/design/bindu-dialect.md, D30): Bindu's
when it names its extension in `X-A2A-Extensions`, when it addresses the task as
`task_id`, or when the server is set to Bindu; the RFC's otherwise."""

from __future__ import annotations

from typing import Any

from a2a import conf
from a2a.lifecycle import Dialect

PAUSE_EXTENSION_URI = "https://taskdeck.dev/extensions/a2a-pause/v1"
BINDU_EXTENSION_URI = "https://getbindu.com/extensions/pause-resume/v1"
EXTENSION_HEADERS = ("X-A2A-Extensions", "A2A-Extensions")


def requested_extensions(headers: Any) -> set[str]:
    found: set[str] = set()
    for name in EXTENSION_HEADERS:
        found.update(v.strip() for v in (headers.get(name) or "").split(",") if v.strip())
    return found


def choose(headers: Any, params: Any) -> Dialect:
    if BINDU_EXTENSION_URI in requested_extensions(headers):
        return Dialect.BINDU
    if isinstance(params, dict) and "task_id" in params:
        return Dialect.BINDU
    return Dialect(conf.TASKDECK.default_dialect)
