from django.apps import AppConfig


class AguiConfig(AppConfig):
    """The AG-UI projection of A2A tasks (view rows, events, WebSocket, run streams).

    Depends on a2a; a2a never imports it. The projector joins every A2A write
    transaction as an in-transaction subscriber, and the scheduler's tick (a registry of
    the runtime's) as the one that takes long-finished tasks out of the live view.
    """

    name = "agui"
    verbose_name = "AG-UI projection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events
        from a2a.runtime.scheduler import PERIODIC
        from agui import projector

        events.subscribe(projector.on_task_event)
        if projector.evict_now_and_then not in PERIODIC:  # ready() may run twice
            PERIODIC.append(projector.evict_now_and_then)
