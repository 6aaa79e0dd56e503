"""How a task ended, in one sentence, from its events (issue 29, "why it ended").

A finished task's status message is the agent's last words ("Scheduled: continuing in 60
minute(s)."), which say nothing about a cancel by an operator or a deadline that failed a
parked task. The event that ended the task says who and why: its actor, its reason and its
kind. `ending_of` turns that event (and, for a task that completed after a rejected
approval, the answer that rejected it) into an `Ending`; it is pure, so the projection
(the board's live row), the task page's timeline (which has every event already) and
`ending` (one indexed read of the task's last ending event, never a scan) share it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from a2a.event_kinds import ENDING_KINDS, EventKind
from a2a.lifecycle import State
from a2a.models import TaskEvent

REASON_CHARS = 300  # the sentence is a summary; the timeline holds the whole reason

_TIMED_OUT = re.compile(r"^timed out after (?P<minutes>[^ ]+) min: ?(?P<why>.*)$", re.S)
_WHOSE_WAIT = {
    State.PAUSED_BY_AGENT: "the agent's wait",
    State.PAUSED_BY_CLIENT: "the pause",
}


@dataclass(frozen=True)
class Ending:
    """How a task ended. `how`: canceled, timed_out, failed, rejected (the agent's refusal)
    or rejected_approval (it completed after an approval was rejected); `by`: the actor
    (`user:ana`, `agent:batch`, `scheduler:taskdeck`); `reason`: theirs, cut at
    REASON_CHARS; `text`: the sentence the banner, the board row and the inbox show."""

    how: str
    by: str
    reason: str
    text: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def repeats(self, words: str) -> bool:
        """Do the agent's last `words` only say the reason again (a failure's status text
        is its reason)? Then they are not shown twice. static/js/describe.js: the same."""
        words = " ".join((words or "").split())
        reason = self.reason
        return words == reason or (reason.endswith("…") and words.startswith(reason[:-1]))


def _cut(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _comment(values: dict[str, Any]) -> str:
    """The comment of the (first) rejected approval field of an answer."""
    for value in (values or {}).values():
        if isinstance(value, dict) and value.get("decision") == "reject":
            return str(value.get("comment") or "")
    return ""


def ending_of(event: TaskEvent, decision: TaskEvent | None = None) -> Ending | None:
    """The ending an ending event (ENDING_KINDS) tells; `decision`: the task's latest
    `input_provided` event, asked for only when a completion may follow a rejection. None
    for a plain completion (the agent's answer says it all) and for any other kind."""
    kind, by = event.kind, event.actor
    reason = _cut(event.reason)
    if kind not in ENDING_KINDS:
        return None
    if kind == EventKind.CANCELED:
        data = event.data or {}
        where = ""
        if data.get("withdrawnRequestId"):
            where = " while it waited for an answer (the question was withdrawn)"
        elif event.from_state in (State.PAUSED_BY_AGENT, State.PAUSED_BY_CLIENT):
            where = " while it was paused"
        why = f": {reason}" if reason else " (no reason given)"
        return Ending("canceled", by, reason, f"Canceled by {by}{where}{why}")
    if kind == EventKind.TIMED_OUT:
        match = _TIMED_OUT.match(event.reason or "")
        wait = _WHOSE_WAIT.get(event.from_state, "the pause")
        if match:
            why = _cut(match["why"])
            said = f" (“{why}”)" if why else ""
            text = (
                f"Timed out: {wait}{said} reached its {match['minutes']}-minute deadline, "
                "and its timeout fails the task"
            )
        else:
            text = f"Timed out: {wait} reached its deadline, and its timeout fails the task"
        return Ending("timed_out", by, reason, text)
    if kind == EventKind.FAILED:
        who = "The agent's error" if by.startswith("agent:") else f"Failed by {by}"
        return Ending("failed", by, reason, f"{who}: {reason or 'no reason given'}")
    if kind == EventKind.REJECTED:
        return Ending("rejected", by, reason, f"Rejected by {by}: {reason or 'no reason given'}")
    # completed: worth a sentence only after its latest question's approval was rejected
    data = (decision.data or {}) if decision is not None else {}
    if decision is None or data.get("decision") != "rejected":
        return None
    comment = _cut(_comment(data.get("values") or {}))
    said = f": “{comment}”" if comment else ""
    text = f"Rejected by {decision.actor}{said} — the agent stood down"
    return Ending("rejected_approval", decision.actor, comment, text)


def ending(task_id: str) -> Ending | None:
    """The ending of a finished task from its last ending event, read through the
    (task, id) index from the newest: a few rows whatever the task's history (plus its
    latest answer when it completed). None while the task runs."""
    events = TaskEvent.objects.filter(task_id=task_id).order_by("-id")
    last = events.filter(kind__in=ENDING_KINDS).first()
    if last is None:
        return None
    decision = None
    if last.kind == EventKind.COMPLETED:
        decision = events.filter(kind=EventKind.INPUT_PROVIDED).first()
    return ending_of(last, decision)


def endings(task_ids: list[str]) -> dict[str, Ending]:
    """The endings of several tasks (the inbox's withdrawn requests) in one query: a task
    ends once, so at most one ending event each. Completions are left out (their records
    say who answered)."""
    found: dict[str, Ending] = {}
    if not task_ids:
        return found
    kinds = [k for k in ENDING_KINDS if k != EventKind.COMPLETED]
    rows = TaskEvent.objects.filter(task_id__in=set(task_ids), kind__in=kinds).order_by("id")
    for event in rows:
        ended = ending_of(event)
        if ended is not None:
            found[event.task_id] = ended
    return found
