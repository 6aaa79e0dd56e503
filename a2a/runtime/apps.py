from django.apps import AppConfig


class RuntimeConfig(AppConfig):
    """Agent execution: durable steps, run leases, the worker job and the scheduler.

    It depends on `a2a.services` and listens to task events; the task core never imports it.
    """

    name = "a2a.runtime"
    label = "runtime"
    verbose_name = "Agent runtime"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, skills
        from a2a.runtime import registry, wakeups

        events.subscribe(wakeups.on_task_event)
        skills.register(registry.skills)
