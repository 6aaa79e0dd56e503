"""Writes and reads of push configs. The only code that changes a PushConfig.

Each write runs in one transaction holding the task's row lock, so config changes of one
task serialise (and the per-task limit holds); nothing is written before every check has
passed, so an error leaves the database as it was. Delivery is a2a.push.delivery's job;
writers only tell it (on commit) that a config may have something to send.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from a2a import access, conf
from a2a.errors import TaskNotFound, ValidationFailed
from a2a.event_kinds import USER_MESSAGE_KINDS, is_user_message
from a2a.models import Task, TaskEvent
from a2a.protocol.params import flatten_errors
from a2a.services import Actor

from . import params, sealing
from .models import PushConfig

if TYPE_CHECKING:
    from a2a.protocol.table import Call

INLINE_FIELD = {"0.3": "pushNotificationConfig", "1.0": "taskPushNotificationConfig"}


class ConfigNotFound(TaskNotFound):
    """No such push config on an existing task. Answered as -32001 (as the a2a-sdk does:
    A2A names no code of its own for it); the detail names the config."""

    def __init__(self, task_id: str, config_id: str | None) -> None:
        self.task_id = task_id
        self.config_id = config_id
        Exception.__init__(
            self,
            f"task {task_id!r} has no push notification config {config_id!r}"
            if config_id
            else f"task {task_id!r} has no push notification config",
        )


@dataclass(frozen=True)
class ConfigInput:
    """A validated config, whatever the wire version it came in."""

    url: str
    config_id: str | None = None
    token: str = ""
    schemes: tuple[str, ...] = ()
    credentials: str = ""

    @classmethod
    def of(cls, data: dict[str, Any]) -> ConfigInput:
        auth = data.get("authentication") or {}
        return cls(
            url=data["url"],
            config_id=data.get("id") or None,
            token=data.get("token") or "",
            schemes=tuple(auth.get("schemes") or ()),
            credentials=auth.get("credentials") or "",
        )


def _limit() -> int:
    return conf.PUSH.max_configs_per_task


def _lock_task(task_id: str, actor: Actor | None) -> Task:
    """The task, row-locked, if `actor` may act on it (its configs are the task's: only
    who may see a task may see, set or delete its webhooks)."""
    task = access.visible(Task.objects.select_for_update().filter(pk=task_id), actor).first()
    if task is None:
        raise TaskNotFound(task_id)
    return task


def set_config(
    task_id: str,
    config: ConfigInput,
    *,
    version: str,
    actor: Actor | None = None,
    start_after: int | None = None,
    field: str = "",
) -> PushConfig:
    """Create the task's config `config.config_id` (default: the task id, as the a2a-sdk
    does), or replace it. A new config is owed the task's events from now on, or those
    after `start_after` when given; a replaced one keeps its place in the log."""
    config_id = config.config_id or task_id
    now = timezone.now()
    with transaction.atomic():
        task = _lock_task(task_id, actor)
        existing = PushConfig.objects.filter(task=task, config_id=config_id).first()
        values = {
            "url": config.url,
            "token": sealing.seal(config.token),
            "auth_schemes": list(config.schemes),
            "auth_credentials": sealing.seal(config.credentials),
            "version": version,
            "updated_at": now,
        }
        if existing is not None:
            for name, value in values.items():
                setattr(existing, name, value)
            existing.save(update_fields=list(values))
            row = existing
        else:
            if PushConfig.objects.filter(task=task).count() >= _limit():
                where = f"{field}.id" if field else "id"
                raise ValidationFailed(
                    {where: [f"the task already has {_limit()} push notification configs"]}
                )
            if start_after is None:
                start_after = _last_event_id(task_id)
            row = PushConfig.objects.create(
                task=task,
                config_id=config_id,
                created_by=str(actor) if actor else "",
                created_at=now,
                start_after=start_after,
                scanned_through=start_after,
                **values,
            )
        pk = row.pk
        transaction.on_commit(lambda: _kick(pk))
    return row


def _kick(pk: int) -> None:
    from . import delivery

    delivery.kick(pk)


def _last_event_id(task_id: str) -> int:
    return TaskEvent.objects.filter(task_id=task_id).aggregate(m=Max("id"))["m"] or 0


def get_config(task_id: str, config_id: str, *, actor: Actor | None) -> PushConfig:
    _require_task(task_id, actor)
    row = PushConfig.objects.filter(task_id=task_id, config_id=config_id).first()
    if row is None:
        raise ConfigNotFound(task_id, config_id)
    return row


def get_config_or_first(task_id: str, config_id: str | None, *, actor: Actor | None) -> PushConfig:
    """The named config, or the task's first one (0.3 `get` semantics)."""
    _require_task(task_id, actor)
    rows = list(PushConfig.objects.filter(task_id=task_id).order_by("created_at", "id"))
    if not rows:
        raise ConfigNotFound(task_id, None)
    return next((r for r in rows if r.config_id == config_id), rows[0])


def list_configs(task_id: str, *, actor: Actor | None) -> list[PushConfig]:
    _require_task(task_id, actor)
    return list(PushConfig.objects.filter(task_id=task_id).order_by("created_at", "id"))


def delete_config(task_id: str, config_id: str, *, actor: Actor | None) -> bool:
    """Delete it with its delivery log; False when there was none (deleting is idempotent)."""
    with transaction.atomic():
        _lock_task(task_id, actor)
        deleted, _ = PushConfig.objects.filter(task_id=task_id, config_id=config_id).delete()
    return bool(deleted)


def _require_task(task_id: str, actor: Actor | None) -> None:
    """A task `actor` may not see is not found, like one that does not exist."""
    if not access.visible(Task.objects.filter(pk=task_id), actor).exists():
        raise TaskNotFound(task_id)


# --- Inline configs on message/send (SendMessage) -----------------------------------------


def check_inline(config: Any, version: str) -> ConfigInput:
    """Validate an inline config (`configuration.pushNotificationConfig` in 0.3,
    `configuration.taskPushNotificationConfig` in 1.0, params already camelized) without
    touching the database; ValidationFailed names the field under `configuration.`.
    Call it before creating the task, so a bad config leaves the database unchanged."""
    where = f"configuration.{INLINE_FIELD[version]}"
    serializer_class = params.PushNotificationConfig03 if version == "0.3" else params.Inline10
    if not isinstance(config, dict):
        raise ValidationFailed({where: ["must be an object"]})
    serializer = serializer_class(data=config)
    if not serializer.is_valid():
        raise ValidationFailed(flatten_errors(serializer.errors, where))
    return ConfigInput.of(serializer.validated_data)


def attach_inline(
    task_id: str, config: Any, version: str, *, actor: Actor | None = None
) -> PushConfig:
    """Store the config that came with a message to `task_id` (message/send, SendMessage
    and their streaming forms), after the message was delivered.

    The config is owed every event from that message on, including those a fast worker
    committed before this call: from the task's first event for a new task, from the
    answer or follow-up for an existing one (the latest user message's event). Validation
    errors are those of `check_inline`; TaskNotFound if the task is gone."""
    checked = check_inline(config, version)
    if version == "1.0":
        named = {config.get("taskId"), config.get("task_id")} - {None}
        if named and named != {task_id}:
            where = f"configuration.{INLINE_FIELD[version]}.taskId"
            raise ValidationFailed({where: ["must name the message's task"]})
    return set_config(
        task_id,
        checked,
        version=version,
        actor=actor,
        start_after=_before_latest_user_message(task_id),
        field=f"configuration.{INLINE_FIELD[version]}",
    )


def send_hook(configuration: dict[str, Any], call: Call) -> Callable[[str], PushConfig] | None:
    """a2a.protocol.methods.SEND_HOOKS entry: an inline config is checked before the
    message is delivered (a bad one refuses the request, nothing written) and stored with
    the delivery, in its transaction."""
    config = configuration.get(INLINE_FIELD[call.version])
    if config is None:
        return None
    check_inline(config, call.version)
    return lambda task_id: attach_inline(task_id, config, call.version, actor=call.actor)


def _before_latest_user_message(task_id: str) -> int:
    """The id just below the event that recorded the task's latest client message."""
    events = TaskEvent.objects.filter(task_id=task_id, kind__in=USER_MESSAGE_KINDS).order_by("-id")
    for event_id, kind, data in events.values_list("id", "kind", "data")[:50]:
        if is_user_message(kind, data):
            return event_id - 1
    return _last_event_id(task_id)
