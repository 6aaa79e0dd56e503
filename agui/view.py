"""What one task looks like in `/view/tasks/<taskId>`, and what a pending interrupt looks
like in `/view/pendingInterrupts/<interruptId>` (pure functions over A2A rows), and how
big the live view may get (`limits`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a import conf
from a2a.formats import pause_facts, text_of, ts
from a2a.lifecycle import PAUSED, TERMINAL, WAITING_FOR_INPUT, State
from a2a.models import Message, Task

TITLE_CHARS = 120
STATUS_TEXT_CHARS = 500
FINISHED = sorted(TERMINAL)  # view entries in these states leave the view after a while
WAITING = sorted(WAITING_FOR_INPUT | PAUSED)  # waiting on a person or an event
# The live view's ranks (docs/agui.md, "Needs a person first"): a socket's window holds
# every task waiting for a person (an answer, an approval, a sign-in) or paused by an
# operator, whatever its size, then the other open tasks, then agent parks, then the
# recently finished; newest change first within each. Only the ranks after the first are
# cut to the byte budget.
NEEDS_PERSON = sorted(WAITING_FOR_INPUT | {State.PAUSED_BY_CLIENT})
PARKED = [str(State.PAUSED_BY_AGENT)]
ACTIVE = sorted({str(s) for s in State} - set(NEEDS_PERSON) - set(PARKED) - set(FINISHED))
RANKS = (NEEDS_PERSON, ACTIVE, PARKED, FINISHED)
FOCUS_GROUPS = {"paused": sorted(PAUSED)}  # the board's "paused or parked" filter


def focus_states(focus: str | None) -> list[str]:
    """The states a board filtered by `focus` (a state, or "paused") wants held before the
    rest; [] for no focus or a name that is no state."""
    if not focus:
        return []
    if focus in FOCUS_GROUPS:
        return FOCUS_GROUPS[focus]
    return [focus] if focus in {str(s) for s in State} else []


# Daphne's websocket_max_message_size (the default `manage.py serve` runs with): a larger
# message is refused and the socket closed with 1011 (issue 15, bug 12). The opening
# snapshot stays below it by HEADROOM whatever SNAPSHOT_BYTES says.
SOCKET_MESSAGE_BYTES = 1024 * 1024
HEADROOM = 16 * 1024
MIN_SNAPSHOT_BYTES = 16 * 1024  # room for a few dozen entries, so a typo cannot empty it


@dataclass(frozen=True)
class Limits:
    """The live view's bound (conf.VIEW, docs/agui.md)."""

    finished_minutes: float  # a finished task stays this long after it finished…
    finished_max: int  # …and only while it is among the newest this many finished
    snapshot_bytes: int  # the most an opening STATE_SNAPSHOT may weigh, serialized


def limits() -> Limits:
    """Read at each use, so a changed setting (or a test's override) applies at once."""
    view = conf.VIEW
    wanted = view.snapshot_bytes
    return Limits(
        finished_minutes=max(0.0, view.finished_minutes),
        finished_max=max(0, view.finished_max),
        snapshot_bytes=max(MIN_SNAPSHOT_BYTES, min(wanted, SOCKET_MESSAGE_BYTES - HEADROOM)),
    )


def task_entry(
    task: Task,
    *,
    version: int,
    status_message: Message | None,
    previous: dict[str, Any] | None,
    title: str | None = None,
    last_interrupt_id: str | None = None,
    artifacts: int | None = None,
    waiting_for_worker_since: str | None = None,
    decision: str | None = None,
    ended: dict[str, Any] | None = None,
    idle_since: str | None = None,
) -> dict[str, Any]:
    """The view entry; fields the projector does not recompute carry over from `previous`.
    `version`: the view's own version of the task (agui.models.ViewTask); `taskVersion`
    says which task version the entry reflects (the task page compares it with the
    task's).
    `waiting_for_worker_since`: when a task resumed to work that no worker has taken yet
    was resumed (the projector's `_waiting_for_worker`). `idle_since`: when a hosted ACP
    agent's session ended its last turn with nothing waiting (its `turn_ended`, the latest
    event of a working task): it waits for the next message. `decision`: the answer to the
    task's latest input request ("approved", "rejected", "provided"), when this event
    answered one; a task that completes after a rejection is shown "Completed · rejected".
    `ended`: how the task ended (`a2a.endings.Ending.as_json()`), when this event ended it;
    the board row says it before the agent's last words. Null while the task runs."""
    previous = previous or {}
    return {
        "taskId": task.id,
        "contextId": task.context_id,
        "skill": task.skill,
        "title": title if title is not None else previous.get("title", ""),
        "status": task.state,
        "statusText": text_of(status_message.parts if status_message else None)[:STATUS_TEXT_CHARS],
        "updatedAt": ts(task.updated_at),
        "createdAt": ts(task.created_at),
        "createdBy": task.created_by,
        "version": version,
        "taskVersion": task.version,
        "lastRunId": previous.get("lastRunId"),
        "lastInterruptId": last_interrupt_id or previous.get("lastInterruptId"),
        "summaries": {
            "progress": task.progress,
            "artifacts": artifacts
            if artifacts is not None
            else previous.get("summaries", {}).get("artifacts", 0),
        },
        "pause": pause_facts(task.current_suspension),
        "waitingForWorkerSince": waiting_for_worker_since,
        "idleSince": idle_since,
        "lastDecision": decision or previous.get("lastDecision"),
        "ended": (ended or previous.get("ended")) if task.state in TERMINAL else None,
        # where it came in (never changes): {door, ref, title}, or null when not recorded
        "origin": (
            {"door": task.origin, "ref": task.origin_ref, "title": task.origin_title}
            if task.origin
            else None
        ),
    }


def pending_entry(
    interrupt_id: str, task_id: str, request_id: str, reason: str, title: str | None
) -> dict:
    """A pending input request; `title` is the request's own, so a client can list what
    waits for an answer without holding every activity."""
    return {
        "interruptId": interrupt_id,
        "taskId": task_id,
        "requestId": request_id,
        "reason": reason,
        "title": str(title or "")[:TITLE_CHARS],
    }


def escape(key: str) -> str:
    """RFC 6901 escaping of a map key inside a JSON Pointer."""
    return key.replace("~", "~0").replace("/", "~1")


def task_path(task_id: str) -> str:
    return f"/view/tasks/{escape(task_id)}"


def pending_path(interrupt_id: str) -> str:
    return f"/view/pendingInterrupts/{escape(interrupt_id)}"
