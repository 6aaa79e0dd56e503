from django.apps import AppConfig


class A2AConfig(AppConfig):
    """The task core: models, state machine, services and the JSON-RPC transport."""

    name = "a2a"
    verbose_name = "A2A tasks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, notify

        events.subscribe(notify.announce, on_commit=True)
