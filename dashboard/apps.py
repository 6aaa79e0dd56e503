from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The operator UI (the project package doubles as its app)."""

    name = "dashboard"
    verbose_name = "Operator dashboard"

    def ready(self) -> None:
        from a2a import health, periodic
        from dashboard import bulkops, websocket_limits

        periodic.register(bulkops.resume_stale)  # bulk actions whose process died
        health.add_section("websockets", websocket_limits.stats)  # sockets closed unread
