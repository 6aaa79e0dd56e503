"""Reads of the projection: the STATE_SNAPSHOT and the pending activities, in a constant
number of queries whatever the number of tasks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agui import view
from agui.models import AguiEvent, Interrupt, ViewTask


def snapshot(task_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """`{"view": {"tasks": {...}, "pendingInterrupts": {...}}}`: two queries."""
    tasks = ViewTask.objects.all()
    pending = Interrupt.objects.filter(pending=True, kind=Interrupt.Kind.INPUT_REQUEST)
    if task_ids is not None:
        ids = list(task_ids)
        tasks, pending = tasks.filter(task_id__in=ids), pending.filter(task_id__in=ids)
    return {
        "view": {
            "tasks": dict(tasks.values_list("task_id", "entry")),
            "pendingInterrupts": {
                iid: view.pending_entry(iid, task_id, request_id, reason, title)
                for iid, task_id, request_id, reason, title in pending.values_list(
                    "interrupt_id", "task_id", "request_id", "reason", "content__request__title"
                )
            },
        }
    }


def pending_activities(task_ids: Iterable[str] | None = None) -> list[Interrupt]:
    qs = Interrupt.objects.filter(pending=True)
    if task_ids is not None:
        qs = qs.filter(task_id__in=list(task_ids))
    return list(qs.order_by("created_at", "interrupt_id"))


def versions(task_ids: Iterable[str] | None = None) -> dict[str, int]:
    qs = ViewTask.objects.all()
    if task_ids is not None:
        qs = qs.filter(task_id__in=list(task_ids))
    return dict(qs.values_list("task_id", "version"))


def cursor() -> int:
    return AguiEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
