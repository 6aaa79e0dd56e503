"""Methods and send hooks that other apps add to the A2A doors (push notifications), named
by the dotted path of a function `add(methods, send_hooks)`.

Why a path and not the function: an app registers in its AppConfig.ready(), which every
process runs, while only the doors' processes serve A2A methods. Importing
`a2a.protocol.methods` there (and Django REST framework's serializers with it) cost each
worker, scheduler and ACP door process 0.2 s of start-up for tables it never reads. So
the table is extended when it is built: `a2a.protocol.methods` calls every `add` named
here at its import. Naming one after that import is refused (an app's ready() runs
before any door reads the table; an `add` named later would be silently missing from
it). This module imports nothing heavy, so registering costs nothing."""

from __future__ import annotations

import sys

from django.utils.module_loading import import_string

_PROVIDERS: list[str] = []


def provide(path: str) -> None:
    """Have `add(methods, send_hooks)` at `path` extend the A2A method table (once, however
    often ready() runs). RuntimeError if the table is already built."""
    if path in _PROVIDERS:
        return
    built = sys.modules.get("a2a.protocol.methods")
    if built is not None and getattr(built, "EXTENDED", False):
        raise RuntimeError(f"the A2A method table is built already; name {path} from ready()")
    _PROVIDERS.append(path)


def extend(methods: dict, send_hooks: list) -> None:
    """Called by `a2a.protocol.methods` once its own table is built."""
    for path in _PROVIDERS:
        import_string(path)(methods, send_hooks)
