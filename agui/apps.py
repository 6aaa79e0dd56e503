from django.apps import AppConfig


class AguiConfig(AppConfig):
    """The AG-UI projection of A2A tasks (view rows, events, WebSocket, run streams).

    Depends on a2a; a2a never imports it. The projector joins every A2A write
    transaction as an in-transaction subscriber, and the scheduler's tick (through the
    core's registry of periodic jobs, a2a.periodic) as the one that takes long-finished
    tasks out of the live view and deletes their log rows after the retention.
    """

    name = "agui"
    verbose_name = "AG-UI projection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, periodic
        from agui import projector, retention

        events.subscribe(projector.on_task_event)
        periodic.register(projector.evict_now_and_then)  # the scheduler runs it
        periodic.register(retention.prune_now_and_then)  # …and the log's retention
