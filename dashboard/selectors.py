"""Reads for the dashboard pages (HackSoft's "selectors"), each in a constant number of
queries whatever the number of tasks or the length of a task's history."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from a2a.errors import TaskNotFound, TransitionRefused, refusal_hint
from a2a.lifecycle import PAUSED, Action, State, move
from a2a.models import Task
from agui.models import Interrupt, ViewTask
from dashboard.models import AuditEntry

STATE_ORDER = [s.value for s in State]
FILTER_CHARS = 200  # longer is a paste accident; SQLite refuses LIKE patterns past 50 kB
PAUSED_STATES = [s.value for s in PAUSED]


# --- board filters (static/js/board.js applies the same rules in the browser) --------------


@dataclass(frozen=True)
class Filters:
    state: str = ""
    skill: str = ""
    context: str = ""
    q: str = ""
    origin: str = ""  # a Task.Origin value; any other value matches nothing, as for state

    @classmethod
    def from_query(cls, query) -> Filters:
        def get(key: str) -> str:
            return (query.get(key) or "").replace("\x00", "").strip()[:FILTER_CHARS]

        return cls(
            state=get("state"),
            skill=get("skill"),
            context=get("context"),
            q=get("q"),
            origin=get("origin"),
        )

    def as_query(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}

    def __bool__(self) -> bool:
        return any(vars(self).values())

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.as_query().items()]
        return ", ".join(parts) or "all tasks"


def _haystack(entry: dict[str, Any]) -> str:
    pause = entry.get("pause") or {}
    fields = [
        entry.get("taskId"),
        entry.get("contextId"),
        entry.get("skill"),
        entry.get("title"),
        entry.get("statusText"),
        pause.get("reason"),
        pause.get("requestedBy"),
    ]
    return " ".join(str(f) for f in fields if f).lower()


def entry_matches(entry: dict[str, Any], f: Filters) -> bool:
    status = entry.get("status")
    if f.state == "paused":
        if status not in PAUSED_STATES:
            return False
    elif f.state and status != f.state:
        return False
    if f.skill and entry.get("skill") != f.skill:
        return False
    if f.context and entry.get("contextId") != f.context:
        return False
    if f.origin and (entry.get("origin") or {}).get("door", "") != f.origin:
        return False
    if f.q:
        hay = _haystack(entry)
        return all(term in hay for term in f.q.lower().split())
    return True


def matching_entries(f: Filters) -> list[dict[str, Any]]:
    """View entries matching the filters, newest update first. One query."""
    qs: QuerySet = ViewTask.objects.order_by("-updated_at", "-task_id")
    if f.state == "paused":
        qs = qs.filter(status__in=PAUSED_STATES)
    elif f.state:
        qs = qs.filter(status=f.state)
    entries = qs.values_list("entry", flat=True)
    return [e for e in entries if entry_matches(e, f)]


# --- where a task came from (the task page; the board reads it from the view entry) ---


ORIGIN_REF = {Task.Origin.ACP: "session", Task.Origin.AGUI: "thread"}


@dataclass(frozen=True)
class Origin:
    """How the dashboard shows the door a task came in by. Blank `door`: not recorded."""

    task_id: str
    door: str
    ref: str = ""
    title: str = ""

    @property
    def label(self) -> str:  # "ACP session"
        return Task.Origin(self.door).label if self.door in Task.Origin.values else self.door

    @property
    def ref_noun(self) -> str:  # "session", "thread"
        return ORIGIN_REF.get(self.door, "reference")


def origin_of(task: Task) -> Origin:
    return Origin(task.id, task.origin, task.origin_ref, task.origin_title)


# --- bulk preview --------------------------------------------------------------------------

BULK_MOVES = {"pause": Action.PAUSE, "resume": Action.RESUME, "cancel": Action.CANCEL}


@dataclass
class Preview:
    action: str
    eligible: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def bulk_preview(action: str, entries: list[dict[str, Any]]) -> Preview:
    """Which of `entries` the action would change, and why the others would be skipped
    (the same state machine the services check; the services decide again at run time)."""
    preview = Preview(action)
    for entry in entries:
        state = entry.get("status")
        try:
            m = move(state, BULK_MOVES[action])
        except TransitionRefused as exc:
            preview.skipped.append((entry, refusal_hint(exc)))
            continue
        if m.noop:
            preview.skipped.append((entry, "already paused"))
        else:
            preview.eligible.append(entry)
    return preview


def entries_for(task_ids: list[str]) -> list[dict[str, Any]]:
    found = dict(ViewTask.objects.filter(task_id__in=task_ids).values_list("task_id", "entry"))
    return [found[t] for t in task_ids if t in found]


# --- inbox ---------------------------------------------------------------------------------


@dataclass
class InboxItem:
    interrupt: Interrupt
    task: Task
    title: str

    @property
    def request(self) -> dict[str, Any]:
        return self.interrupt.content.get("request") or {}

    @property
    def fields(self) -> list[dict[str, Any]]:
        return list(self.request.get("fields") or [])

    @property
    def outcome(self) -> dict[str, Any]:
        """How a resolved request ended, for "Approved by operator:ana at 14:05: 'ship it'"."""
        c = self.interrupt.content or {}
        decision = c.get("decision")
        values = c.get("values") or {}
        quote = ""
        approval = next((f["name"] for f in self.fields if f.get("type") == "approval"), None)
        if approval and isinstance(values.get(approval), str):
            quote = values[approval].partition(": ")[2]
            others = {k: v for k, v in values.items() if k != approval}
        else:
            others = values
        verb = {"approved": "Approved", "rejected": "Rejected", "provided": "Answered"}.get(
            decision or "", "Withdrawn" if c.get("stage") == "withdrawn" else "Closed"
        )
        at = c.get("answeredAt")
        return {
            "verb": verb,
            "decision": decision or c.get("stage", ""),
            "by": c.get("answeredBy", ""),
            "at": datetime.fromisoformat(at.replace("Z", "+00:00")) if at else None,
            "quote": quote,
            "values": list(others.items()),
        }


def inbox(q: str = "", resolved_limit: int = 50) -> tuple[list[InboxItem], list[InboxItem]]:
    """Pending input requests (oldest first: they have waited longest) and the most recent
    resolved ones. Three queries."""
    base = Interrupt.objects.filter(kind=Interrupt.Kind.INPUT_REQUEST).select_related("task")
    pending = list(base.filter(pending=True).order_by("created_at", "interrupt_id"))
    resolved = list(base.filter(pending=False).order_by("-resolved_at", "-interrupt_id"))
    resolved = resolved[: resolved_limit * 2]
    ids = {i.task_id for i in pending + resolved}
    titles = dict(ViewTask.objects.filter(task_id__in=ids).values_list("task_id", "entry__title"))

    def item(i: Interrupt) -> InboxItem:
        return InboxItem(i, i.task, titles.get(i.task_id) or "")

    items_p = [item(i) for i in pending]
    items_r = [item(i) for i in resolved]
    if q:
        terms = q.lower().split()

        def hit(it: InboxItem) -> bool:
            hay = " ".join(
                [
                    it.task.id,
                    it.title,
                    it.task.skill,
                    str(it.request.get("title", "")),
                    str(it.interrupt.content.get("explanation", "")),
                ]
            ).lower()
            return all(t in hay for t in terms)

        items_p = [i for i in items_p if hit(i)]
        items_r = [i for i in items_r if hit(i)]
    return items_p, items_r[:resolved_limit]


def pending_interrupt(interrupt_id: str) -> Interrupt | None:
    return (
        Interrupt.objects.filter(
            interrupt_id=interrupt_id, kind=Interrupt.Kind.INPUT_REQUEST, pending=True
        )
        .select_related("task")
        .first()
    )


# --- audit ---------------------------------------------------------------------------------


def audit_entries(query, limit: int = 200) -> tuple[list[AuditEntry], dict[str, str]]:
    f = {
        k: (query.get(k) or "").replace("\x00", "").strip()[:FILTER_CHARS]
        for k in ("who", "action", "task", "outcome", "q")
    }
    qs = AuditEntry.objects.all()
    if f["who"]:
        qs = qs.filter(who__icontains=f["who"])
    if f["action"]:
        qs = qs.filter(action=f["action"])
    if f["task"]:
        qs = qs.filter(task_id=f["task"]) | qs.filter(detail__contains=f["task"])
    if f["outcome"]:
        qs = qs.filter(outcome=f["outcome"])
    if f["q"]:
        qs = qs.filter(reason__icontains=f["q"]) | qs.filter(detail__icontains=f["q"])
    return list(qs.order_by("-at", "-id")[:limit]), f


def get_task(task_id: str) -> Task:
    try:
        return Task.objects.select_related("current_suspension", "status_message").get(pk=task_id)
    except (Task.DoesNotExist, ValueError):
        raise TaskNotFound(task_id) from None
