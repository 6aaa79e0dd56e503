"""The background job (Django's Tasks API): try one alert delivery."""

from __future__ import annotations

from django_tasks import task

from a2a.alerts import delivery


@task()
def deliver_alert(delivery_pk: int) -> str:
    """Try delivery `delivery_pk` once if it is due; a failure queues the next try."""
    return delivery.run(delivery_pk)
