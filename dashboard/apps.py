from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The operator UI (the project package doubles as its app)."""

    name = "dashboard"
    verbose_name = "Operator dashboard"

    def ready(self) -> None:
        from a2a import health
        from dashboard import websocket_limits

        health.add_section("websockets", websocket_limits.stats)  # sockets closed unread
