"""What an operator needs to decide a pending request without leaving the inbox (issue 15,
feature 2): the artifacts the agent attached (its plan, a diff, a report) and the task's
recent timeline, beside the request's own explanation.

For every pending request at once, in four queries whatever their number: the newest
artifacts and the newest events of each task (window functions keep each to one query),
the messages those events point at, and the suspensions. Artifacts are cut to
ARTIFACT_CHARS (the whole one is a link away, on the task page)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from a2a.models import Artifact, Message, Suspension, TaskEvent
from agui.models import Interrupt
from dashboard.timeline import Entry, entry_of

ARTIFACTS = 2  # the newest, per task
EVENTS = 6  # the newest timeline entries, per task
ARTIFACT_CHARS = 3000


@dataclass
class Shown:
    """An artifact as the inbox shows it."""

    name: str
    text: str
    cut: bool


@dataclass
class Context:
    artifacts: list[Shown] = field(default_factory=list)
    recent: list[Entry] = field(default_factory=list)  # oldest first


def _newest(qs, per_task: int, order: str):
    return qs.annotate(
        _n=Window(RowNumber(), partition_by=[F("task_id")], order_by=F(order).desc())
    ).filter(_n__lte=per_task)


def shown(artifact: Artifact) -> Shown:
    pieces = []
    for part in artifact.parts or []:
        kind = part.get("kind")
        if kind == "text":
            pieces.append(str(part.get("text", "")))
        elif kind == "data":
            pieces.append(json.dumps(part.get("data"), indent=2, ensure_ascii=False))
        elif kind == "file":
            f = part.get("file") or {}
            pieces.append(f"[file {f.get('name') or f.get('uri') or ''}]")
    text = "\n".join(pieces)
    return Shown(
        name=artifact.name or artifact.artifact_id,
        text=text[:ARTIFACT_CHARS],
        cut=len(text) > ARTIFACT_CHARS,
    )


def for_requests(interrupts: list[Interrupt]) -> dict[str, Context]:
    """task id → Context, for the tasks of these pending requests."""
    ids = {i.task_id for i in interrupts}
    if not ids:
        return {}
    out = {task_id: Context() for task_id in ids}
    by_artifact: dict[str, Artifact] = {}
    for a in sorted(_newest(Artifact.objects.filter(task_id__in=ids), ARTIFACTS, "seq"),
                    key=lambda a: a.seq):  # fmt: skip
        out[a.task_id].artifacts.append(shown(a))
        by_artifact[a.artifact_id] = a
    newest = _newest(TaskEvent.objects.filter(task_id__in=ids), EVENTS, "id")
    events = sorted(newest, key=lambda e: e.id)
    seqs = {(e.data or {}).get("messageSeq") for e in events}
    seqs = {s for s in seqs if isinstance(s, int)}
    by_seq: dict[str, dict[int, Message]] = {task_id: {} for task_id in ids}
    for m in Message.objects.filter(task_id__in=ids, seq__in=seqs) if seqs else []:
        by_seq[m.task_id][m.seq] = m
    handles = {(e.data or {}).get("handle") for e in events} - {None}
    suspensions = Suspension.objects.filter(handle__in=handles) if handles else []
    by_handle = {s.handle: s for s in suspensions}
    requests = {i.request_id: i for i in interrupts}
    for e in events:
        entry = entry_of(e, by_seq[e.task_id], by_handle, by_artifact, requests)
        if entry is not None:
            out[e.task_id].recent.append(entry)
    return out
