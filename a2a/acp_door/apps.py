from django.apps import AppConfig


class AcpDoorConfig(AppConfig):
    """ACP sessions ↔ Taskdeck contexts. Label `acp_door`, never `acp` (the SDK's name)."""

    name = "a2a.acp_door"
    label = "acp_door"
    verbose_name = "ACP sessions"
    default_auto_field = "django.db.models.BigAutoField"
