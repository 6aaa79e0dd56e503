"""Methods and send hooks that other apps add to the A2A doors (push notifications), named
by the dotted path of a function `add(methods, send_hooks)`.

Why a path and not the function: an app registers in its AppConfig.ready(), which every
process runs, while only the doors' processes serve A2A methods. Importing
`a2a.protocol.methods` there (and Django REST framework's serializers with it) cost each
worker, scheduler and ACP door process 0.2 s of start-up for tables it never reads. So
the table is extended when it is built: `a2a.protocol.methods` calls every `add` named
here at its import, and one named after that import is called at once. This module
imports nothing, so registering costs nothing."""

from __future__ import annotations

import sys

from django.utils.module_loading import import_string

_PROVIDERS: list[str] = []


def provide(path: str) -> None:
    """Have `add(methods, send_hooks)` at `path` extend the A2A method table (once, however
    often ready() runs)."""
    if path in _PROVIDERS:
        return
    _PROVIDERS.append(path)
    built = sys.modules.get("a2a.protocol.methods")
    if built is not None and getattr(built, "EXTENDED", False):
        import_string(path)(built.METHODS, built.SEND_HOOKS)


def extend(methods: dict, send_hooks: list) -> None:
    """Called by `a2a.protocol.methods` once its own table is built."""
    for path in _PROVIDERS:
        import_string(path)(methods, send_hooks)
