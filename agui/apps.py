from django.apps import AppConfig


class AguiConfig(AppConfig):
    """The AG-UI projection of A2A tasks (view rows, events, WebSocket, run streams).

    Depends on a2a; a2a never imports it. The projection hears every A2A commit as an
    on-commit subscriber and asks writers for durable due rows (agui.projection, D8), and
    joins the scheduler's tick (through the core's registry of periodic jobs,
    a2a.periodic) as the one that projects what a dead process left, takes long-finished
    tasks out of the live view and deletes their log rows after the retention. /healthz
    shows its sockets and log readers (a2a.health.add_section).
    """

    name = "agui"
    verbose_name = "AG-UI projection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, health, periodic
        from agui import fanout, projection, projector, retention

        events.set_projected(True)  # writers record ProjectionDue rows from now on
        # before a2a's announcement: the projector thread starts on the change while the
        # writer still waits for Redis (bench/agui_fanout.py: commit -> STATE_DELTA)
        events.subscribe(projection.wake, on_commit=True, first=True)
        periodic.register(projection.sweep)  # what a process that died left unprojected
        periodic.register(projector.evict_now_and_then)  # the scheduler runs it
        periodic.register(retention.prune_now_and_then)  # …and the log's retention
        health.add_section("sockets", fanout.stats)  # /healthz: this process's sockets
