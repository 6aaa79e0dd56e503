"""The background job (Django's Tasks API): deliver a push config's pending events."""

from __future__ import annotations

from django_tasks import task

from a2a.push import delivery


@task()
def deliver_push(config_pk: int) -> str:
    """Deliver what config `config_pk` is owed, in order; short by design (see delivery)."""
    return delivery.run(config_pk)
