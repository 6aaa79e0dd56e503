"""Two roles, as Django groups: operators act (they hold `a2a.operate_task`), viewers
watch. Superusers hold every permission, so they operate too."""

from __future__ import annotations

OPERATORS = "operators"
VIEWERS = "viewers"
OPERATE = "a2a.operate_task"


def can_operate(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(OPERATE))


def ensure_groups(group_model, permission_model, content_type_model) -> None:
    """Create both groups and give operators the permission. Takes the model classes so
    the data migration (historical models) and seed_demo/tests (real ones) share it."""
    ct, _ = content_type_model.objects.get_or_create(app_label="a2a", model="task")
    perm, _ = permission_model.objects.get_or_create(
        codename="operate_task",
        content_type=ct,
        defaults={"name": "Can pause, resume, cancel and answer tasks"},
    )
    operators, _ = group_model.objects.get_or_create(name=OPERATORS)
    operators.permissions.add(perm)
    group_model.objects.get_or_create(name=VIEWERS)


def setup_groups() -> None:
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    ensure_groups(Group, Permission, ContentType)
