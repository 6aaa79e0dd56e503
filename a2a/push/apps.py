from django.apps import AppConfig


class PushAppConfig(AppConfig):
    """Push notifications: configs, delivery log, the delivery job and JSON-RPC methods."""

    name = "a2a.push"
    label = "push"
    verbose_name = "A2A push notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, periodic
        from a2a.protocol.methods import METHODS, SEND_HOOKS
        from a2a.push import delivery, services
        from a2a.push.methods import PUSH_METHODS_03, PUSH_METHODS_10

        events.subscribe(delivery.on_task_event)  # in the transaction: commits with the event
        if services.send_hook not in SEND_HOOKS:  # inline configs on message/send
            SEND_HOOKS.append(services.send_hook)  # (ready() may run twice)
        periodic.register(delivery.sweep_now_and_then)  # jobs lost with a dead worker
        # Registered from here rather than imported by a2a.protocol.methods: the core does
        # not depend on this app, and the import cycle (push.methods needs Method) is avoided.
        METHODS.update(PUSH_METHODS_03)
        METHODS.update(PUSH_METHODS_10)
