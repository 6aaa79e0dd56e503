"""Task events of hosted agents (in the writer's transaction): a new task gets its session
row and its run lease, a message or a resume counts a wakeup, and every change rings the
supervisors on commit — a pause or a cancel must reach the agent's process at once.

The runtime's own wakeups (a2a.runtime.wakeups) skip these tasks: no job is queued, no
worker runs them. The run lease is kept by the runtime's functions (a2a.runtime.leases:
wakeups counted here, served by the supervisor at the end of each turn), so a blocking
send waits for a hosted agent's turn exactly as for a worker's run (a2a.work).
"""

from __future__ import annotations

from a2a.acp_host import bell, config
from a2a.event_kinds import EventKind, is_user_message
from a2a.lifecycle import State
from a2a.models import TaskEvent
from a2a.runtime import leases


def on_task_event(event: TaskEvent) -> None:
    if config.get(event.task.skill) is None:
        return
    from a2a.acp_host.models import HostedSession

    wakes = event.kind == EventKind.RESUMED or is_user_message(event.kind, event.data)
    if event.kind == EventKind.CREATED:
        HostedSession.objects.create(task_id=event.task_id, agent=event.task.skill)
        leases.open_without_job(event.task_id)
    elif wakes and event.to_state in (State.SUBMITTED, State.WORKING):
        leases.count_wakeup(event.task_id)
    # the supervisor holding it looks at once (a2a.acp_host.bell); a new task is rung too,
    # so a supervisor's next look for free sessions comes now, not at its poll
    bell.ring(event.task_id)
