"""The runtime's system check (taskdeck.E005, beside a2a/checks.py): every agent module in
settings.TASKDECK["AGENTS"] (the built-in ones and TASKDECK_EXTRA_AGENTS) loads and has
what a2a.runtime.registry needs, so a typo stops `manage.py check` and the workers'
start-up with the module's name, not the first task of that skill."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.core.checks import Error, register

from a2a import conf


@register("taskdeck")
def check_agents(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    for path in conf.TASKDECK.agents:
        try:
            module = import_module(path)
        except Exception as exc:
            why = f"cannot be imported ({type(exc).__name__}: {exc})"
        else:
            missing = [name for name in ("SKILL", "run") if not hasattr(module, name)]
            if not missing:
                continue
            why = f"has no {' or '.join(missing)}"
        errors.append(
            Error(
                f"TASKDECK_EXTRA_AGENTS (settings.TASKDECK['AGENTS']): agent module {path!r} {why}",
                id="taskdeck.E005",
            )
        )
    return errors
