"""Tasks, messages and pause records in A2A 0.3 wire form (and Bindu's variant).

docs/design/house-rules.md, D5: wire formats live here, at the edge; the core speaks models.
"""

from __future__ import annotations

from typing import Any

from a2a.formats import pause_facts, ts
from a2a.lifecycle import PAUSED, Dialect
from a2a.models import Artifact, Message, Suspension, Task
from a2a.selectors import TaskView

BINDU_SUSPENDED = "suspended"
BINDU_RESUMED = "resumed"


def message(m: Message, task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "message",
        "messageId": m.message_id,
        "role": m.role,
        "parts": m.parts,
        "taskId": task.id,
        "contextId": task.context_id,
    }
    if m.metadata:
        out["metadata"] = m.metadata
    if m.reference_task_ids:
        out["referenceTaskIds"] = m.reference_task_ids
    return out


def artifact(a: Artifact) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactId": a.artifact_id, "parts": a.parts}
    if a.name:
        out["name"] = a.name
    if a.description:
        out["description"] = a.description
    if a.metadata:
        out["metadata"] = a.metadata
    return out


def pause_info(s: Suspension) -> dict[str, Any]:
    """The RFC's paused-update fields for an open suspension: the shared pause facts
    without who asked (an API client sees the pause, not another caller's identity)."""
    facts = pause_facts(s) or {}
    return {k: v for k, v in facts.items() if k != "requestedBy"}


def checkpoint(view: TaskView, s: Suspension) -> dict[str, Any]:
    """Bindu's `metadata.checkpoint`, derived from the open suspension (so it can never
    disagree with it, and disappears when the suspension ends)."""
    history = view.history if view.pause_history is None else view.pause_history
    artifacts = view.artifacts if view.pause_artifacts is None else view.pause_artifacts
    return {
        "paused_from_state": s.paused_from,
        "message_history": [message(m, view.task) for m in history],
        "artifacts": [artifact(a) for a in artifacts],
        "paused_at": ts(s.suspended_at),
    }


def task(view: TaskView, dialect: Dialect = Dialect.RFC, *, history: bool = True) -> dict:
    t = view.task
    state = t.state
    metadata = dict(t.metadata)
    susp = t.current_suspension
    if dialect is Dialect.BINDU:
        metadata.pop("checkpoint", None)
        if state in PAUSED and susp is not None:
            state = BINDU_SUSPENDED
            metadata["checkpoint"] = checkpoint(view, susp)
    elif susp is not None:
        metadata["pause"] = pause_info(susp)
    status: dict[str, Any] = {"state": state, "timestamp": ts(t.status_timestamp)}
    if t.status_message is not None:
        status["message"] = message(t.status_message, t)
    out: dict[str, Any] = {
        "kind": "task",
        "id": t.id,
        "contextId": t.context_id,
        "status": status,
        "artifacts": [artifact(a) for a in view.artifacts],
        "metadata": metadata,
    }
    if history:
        out["history"] = [message(m, t) for m in view.history]
    return out


def receipt(t: Task, dialect: Dialect = Dialect.RFC) -> dict[str, Any]:
    """What a write method answers a key without the `read` scope: that the task exists
    and its state — not its history, artifacts, metadata or messages (issue 12, finding 8)."""
    state = BINDU_SUSPENDED if dialect is Dialect.BINDU and t.state in PAUSED else t.state
    return {
        "kind": "task",
        "id": t.id,
        "contextId": t.context_id,
        "status": {"state": state, "timestamp": ts(t.status_timestamp)},
        "artifacts": [],
        "history": [],
    }


def pause_result(task_: Task, s: Suspension, *, agent: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": task_.id,
        "state": task_.state,
        "handle": s.handle,
        "pausedAt": ts(s.suspended_at),
    }
    if not agent:
        out["reason"] = s.reason
    if s.conditions:
        out["conditions"] = s.conditions
    if s.deadline:
        out["deadline"] = ts(s.deadline)
    return out


def resume_result(task_: Task, s: Suspension | None, previous_state: str) -> dict[str, Any]:
    return {
        "taskId": task_.id,
        "state": task_.state,
        "previousState": previous_state,
        "cause": s.cause if s else Suspension.Cause.EXPLICIT_RESUME,
        "hadResumeInput": bool(s and s.had_resume_input),
        "continueTranscript": s.continue_transcript if s else True,
        "resumedAt": ts(s.ended_at if s else task_.status_timestamp),
    }
