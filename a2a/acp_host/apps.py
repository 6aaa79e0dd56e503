import sys

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class AcpHostConfig(AppConfig):
    """Hosted ACP agents: their skills, their sessions and the supervisor that runs them.

    It depends on `a2a.services` and the runtime's leases and listens to task events; the
    task core never imports it. Its skills are registered as running their own tasks, so
    the runtime's workers and scheduler leave those tasks to the supervisors."""

    name = "a2a.acp_host"
    label = "acp_host"
    verbose_name = "Hosted ACP agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2a import events, skills
        from a2a.acp_host import config, hooks

        try:  # a broken configuration fails at start, not at the first task
            config.check_all()
        except ImproperlyConfigured as exc:  # a message naming the key, not a traceback
            sys.stderr.write(f"Taskdeck cannot start: {exc}\n")
            raise SystemExit(2) from None
        skills.register(config.skills, runs_own_tasks=True)
        events.subscribe(hooks.on_task_event)
