from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The operator UI (the project package doubles as its app)."""

    name = "dashboard"
    verbose_name = "Operator dashboard"
