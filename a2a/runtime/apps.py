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
        from django_tasks.signals import task_enqueued, task_finished, task_started

        from a2a import events, skills
        from a2a.runtime import beats, checks, doorbell, registry, wakeups  # noqa: F401 (checks)

        events.subscribe(wakeups.on_task_event)
        skills.register(registry.skills)
        # a worker's beat names the job it runs (scheduler.reclaim_jobs reads it)
        task_started.connect(beats.on_job_started, dispatch_uid="taskdeck-beat-started")
        task_finished.connect(beats.on_job_finished, dispatch_uid="taskdeck-beat-finished")
        # a job row written anywhere (runs, retries, push deliveries) wakes idle workers
        task_enqueued.connect(doorbell.on_job_enqueued, dispatch_uid="taskdeck-doorbell")
