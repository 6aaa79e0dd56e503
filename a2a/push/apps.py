from django.apps import AppConfig


class PushAppConfig(AppConfig):
    """Push notifications: configs, delivery log, the delivery job and JSON-RPC methods."""

    name = "a2a.push"
    label = "push"
    verbose_name = "A2A push notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, periodic
        from a2a.protocol import extensions
        from a2a.push import delivery

        events.subscribe(delivery.on_task_event)  # in the transaction: commits with the event
        periodic.register(delivery.sweep_now_and_then)  # jobs lost with a dead worker
        # Its methods and message/send's inline configs, added when the doors build their
        # method table (a2a/protocol/extensions.py says why by name): the core does not
        # depend on this app, and the import cycle (push.methods needs Method) is avoided.
        extensions.provide("a2a.push.methods.add")
