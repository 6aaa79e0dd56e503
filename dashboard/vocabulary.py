"""The dashboard's words for what operators and clients do to tasks, kept in one place.

Each page used to build its past tenses by gluing "d" to the verb, which gave "canceld";
the bulk preview, its summary, the audit log and the audit's API rows now read the same
`Verb`, so one spelling ("canceled", like the task state) holds everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verb:
    """An action's name as stored (`cancel`), as a button says it (`Cancel`) and as a result
    says it (`canceled`)."""

    name: str
    label: str
    past: str


VERBS: dict[str, Verb] = {
    v.name: v
    for v in (
        Verb("pause", "Pause", "paused"),
        Verb("resume", "Resume", "resumed"),
        Verb("cancel", "Cancel", "canceled"),
        Verb("answer", "Answer", "answered"),
        Verb("rerun", "Re-run", "re-run"),
        Verb("retry", "Retry from the failed step", "retried"),
    )
}

BULK_ACTIONS = ("pause", "resume", "cancel")
# What the audit log's action filter offers: every action an operator's request is
# recorded under (dashboard.actions), and the API clients' (selectors.API_EVENT_ACTIONS).
AUDIT_ACTIONS = [
    "pause", "resume", "cancel", "answer", "emit-event", "start", "rerun", "retry",
    "bulk-pause", "bulk-resume", "bulk-cancel", "bulk", "release-sign-in",
]  # fmt: skip

# What each pause mode means for the agent (the audit detail of a pause, the dashboard's or
# an API client's).
MODE_EFFECT = {
    "finish_step": "The agent finishes its current step, then stops.",
    "interrupt_immediate": "The agent stops now; the step in flight reruns on resume.",
    "wait_for_completion": "The agent finishes this turn, then stops.",
}


def verb(name: str) -> Verb:
    """The words for `name`; an unknown action keeps its own name rather than failing a
    page over a word."""
    return VERBS.get(name) or Verb(name, name.capitalize(), name)
