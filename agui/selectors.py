"""Reads of the projection: the STATE_SNAPSHOT and the pending activities, in a constant
number of queries whatever the number of tasks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from a2a import access
from a2a.models import Task
from agui import view
from agui.models import AguiEvent, Interrupt, ViewTask

if TYPE_CHECKING:
    from a2a.services import Actor


def _narrow(qs, task_ids: Iterable[str] | None, visible_to: Actor | None):
    if task_ids is not None:
        qs = qs.filter(task_id__in=list(task_ids))
    return access.visible(qs, visible_to, owner_field="task__owner")


def snapshot(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> dict[str, Any]:
    """`{"view": {"tasks": {...}, "pendingInterrupts": {...}}}`: two queries. Only the
    tasks `visible_to` may see (a restricted API key: its own tenant's)."""
    ids = list(task_ids) if task_ids is not None else None
    tasks = _narrow(ViewTask.objects.all(), ids, visible_to)
    pending = _narrow(
        Interrupt.objects.filter(pending=True, kind=Interrupt.Kind.INPUT_REQUEST), ids, visible_to
    )
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


def pending_activities(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> list[Interrupt]:
    qs = _narrow(Interrupt.objects.filter(pending=True), task_ids, visible_to)
    return list(qs.order_by("created_at", "interrupt_id"))


def versions(
    task_ids: Iterable[str] | None = None, visible_to: Actor | None = None
) -> dict[str, int]:
    qs = _narrow(ViewTask.objects.all(), task_ids, visible_to)
    return dict(qs.values_list("task_id", "version"))


def visible_ids(task_ids: Iterable[str], visible_to: Actor) -> set[str]:
    """Which of `task_ids` `visible_to` may see (one query)."""
    return set(
        access.visible(Task.objects.filter(pk__in=list(task_ids)), visible_to).values_list(
            "pk", flat=True
        )
    )


def cursor() -> int:
    return AguiEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
