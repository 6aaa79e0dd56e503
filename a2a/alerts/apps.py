from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Operator alerts. Detection joins the scheduler's tick through the core's registry of
    periodic jobs (a2a.periodic), so the runtime never imports this app; delivery runs as a
    background job on the workers, so a slow SMTP server or webhook never holds the tick."""

    name = "a2a.alerts"
    label = "alerts"
    verbose_name = "Operator alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import periodic
        from a2a.alerts import detect

        periodic.register(detect.tick)
