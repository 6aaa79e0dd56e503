from django.apps import AppConfig


class RuntimeConfig(AppConfig):
    """Agent execution: durable steps, run leases, the worker job and the scheduler.

    It depends on the core only (`a2a.services`, task events); the core and the doors never
    import it: it answers them through the core's seams (`a2a.work`, `a2a.skills`), and runs
    the periodic jobs others register (`a2a.periodic`).
    """

    name = "a2a.runtime"
    label = "runtime"
    verbose_name = "Agent runtime"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_tasks.signals import task_enqueued, task_finished, task_started

        from a2a import events, skills, work
        from a2a.runtime import (  # noqa: F401 (checks)
            beats,
            checks,
            doorbell,
            inline,
            journal,
            registry,
            settle,
            wakeups,
        )

        events.subscribe(wakeups.on_task_event)
        skills.register(registry.skills)
        # the doors' "is it settled?" and "may it run here?" (a2a.work): this runtime's
        # leases (the ACP host keeps them too) and its inline runs answer them
        work.provide(
            work.Runner(
                settled=settle.settled,
                until_settled=settle.until_settled,
                may_run_here=inline.wanted,
                running_here=inline.running,
                starts_at_once=inline.starts_at_once,
                recorded_steps=journal.recorded_steps,
                carry_steps=journal.carry_steps,
            )
        )
        # a worker's beat names the job it runs (scheduler.reclaim_jobs reads it)
        task_started.connect(beats.on_job_started, dispatch_uid="taskdeck-beat-started")
        task_finished.connect(beats.on_job_finished, dispatch_uid="taskdeck-beat-finished")
        # a job row written anywhere (runs, retries, push deliveries) wakes idle workers
        task_enqueued.connect(doorbell.on_job_enqueued, dispatch_uid="taskdeck-doorbell")
