"""Which hosted sessions changed: the supervisors' own bell, naming the task.

The workers' bell (a2a.runtime.doorbell) says only "a job is ready"; a supervisor holding
a hundred idle sessions woken by it would have every one re-read its task on every change
of any task. This one carries the task's id (NOTIFY `taskdeck_acp` on PostgreSQL, the local
inbox kind "acp" on SQLite): only the session it names looks. A lost ring costs that
session its idle re-read interval (session.IDLE_SECONDS); a new task is found by the
supervisor's poll for free sessions.
"""

from __future__ import annotations

import threading

from a2a.runtime import doorbell

CHANNEL = "taskdeck_acp"
INBOX = "acp"
MAX_NAMES = 10_000  # ids remembered between two waits; beyond, everyone looks ("*")


def ring(task_id: str) -> None:
    """When the current transaction commits, tell the supervisors that `task_id` changed."""
    doorbell.ring_on_commit(CHANNEL, INBOX, task_id)


class SessionBell(doorbell.Bell):
    """The workers' bell, hearing task ids instead of due times."""

    def __init__(self) -> None:
        super().__init__(channel=CHANNEL, inbox=INBOX)
        self.names: set[str] = set()
        self.names_lock = threading.Lock()

    def heard(self, payload: str) -> None:
        with self.names_lock:
            # "" is a (re)connected LISTEN saying rings may have been lost: everyone looks
            self.names.add(payload if payload and len(self.names) < MAX_NAMES else "*")
        with self.cond:
            self.ready = True
            self.cond.notify_all()

    def take(self) -> set[str]:
        """The task ids rung since the last take ("*": all of them)."""
        with self.names_lock:
            names, self.names = self.names, set()
        return names
