from django.apps import AppConfig


class AguiConfig(AppConfig):
    """The AG-UI projection of A2A tasks (view rows, events, WebSocket, run streams)."""

    name = "agui"
    verbose_name = "AG-UI projection"
