"""The background job (Django's Tasks API, django-tasks backport): run a task's agent."""

from __future__ import annotations

from django_tasks import task

from a2a.runtime import executor


@task()
def run_task(task_id: str) -> str:
    """Run slices of `task_id` until it stops (paused, waiting, done) or another worker
    holds it. Short by design: a waiting task frees its worker."""
    return executor.run(task_id)
