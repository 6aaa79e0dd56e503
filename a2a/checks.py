"""System checks for Taskdeck's settings (`manage.py check`, and every command that runs
the checks): the values as Django holds them, against their declarations in a2a/conf.py.

The environment's values were already checked when the settings were read (a bad one
stops start-up there); these catch what Python settings or an override set, and what only
the loaded apps know — which skills are offered, which scopes exist. Each message starts
with the variable that sets the value.

- taskdeck.E001  a value of the wrong kind or out of its bounds
- taskdeck.E002  two values that do not go together (e.g. a poll longer than the lease)
- taskdeck.E003  TASKDECK_DEFAULT_SKILL is a skill nobody offers
- taskdeck.E004  TASKDECK_ANONYMOUS_SCOPES names a scope that does not exist
- taskdeck.E005  an agent module that cannot be loaded (a2a/runtime/checks.py)
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from a2a import conf, skills
from a2a.models import ApiKey
from a2a.setting_kinds import Setting

TAG = "taskdeck"

# The checks a process that serves no page runs when it starts (workers, the scheduler, the
# ACP host's supervisor, the gRPC binding): Taskdeck's own and Django's but the URL,
# template, admin and static-file ones. Those import the whole URLconf, every door and the
# ACP SDK with it: 1.3 s of CPU at each worker's start (0.7 s at a scheduler's), for pages
# such a process never serves. `manage.py check` and `serve --check` still run them all.
PROCESS_CHECKS = [TAG, "models", "caches", "commands", "compatibility", "files", "security",
                  "translation"]  # fmt: skip


def _where(setting: Setting[Any]) -> str:
    path = setting.section.path(setting.key)
    return f"{setting.env} (settings.{path})" if setting.env else f"settings.{path}"


@register(TAG)
def check_values(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    for section in conf.SECTIONS:
        for setting in section.declared():
            value = setting.live()
            if (why := setting.problem(value)) is not None:
                message = f"{_where(setting)} is {setting.shown(value)}: {why}"
                errors.append(Error(message, hint=setting.meaning, id="taskdeck.E001"))
    return errors


@register(TAG)
def check_relations(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(why, id="taskdeck.E002")
        for relation in conf.RELATIONS
        if (why := relation.problem(lambda s: s.live())) is not None
    ]


@register(TAG)
def check_default_skill(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    skill = conf.TASKDECK.default_skill
    try:
        offered = skills.ids()
    except Exception:  # a provider that cannot load reports itself (its own check, or use)
        return []
    if skill in offered:
        return []
    return [
        Error(
            f"TASKDECK_DEFAULT_SKILL is {skill!r}: no agent offers this skill",
            hint="offered: " + (", ".join(offered) or "none"),
            id="taskdeck.E003",
        )
    ]


@register(TAG)
def check_anonymous_scopes(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    unknown = [s for s in conf.TASKDECK.anonymous_scopes if s not in ApiKey.Scope.values]
    if not unknown:
        return []
    return [
        Error(
            f"TASKDECK_ANONYMOUS_SCOPES names {', '.join(unknown)}: no such scope",
            hint="scopes: " + ", ".join(ApiKey.Scope.values),
            id="taskdeck.E004",
        )
    ]
