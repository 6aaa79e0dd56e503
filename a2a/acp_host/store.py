"""The supervisor's reads and bookkeeping writes (sync: called through the runtime's
fault-guarded database thread, a2a.runtime.faults.in_db_thread).

Task changes go through `a2a.services`; what is written here is the host's own state of a
session (who holds it, what was handed to the agent). The run lease of a turn is the
runtime's (a2a.runtime.leases): renewed and let go through its functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from a2a import conf
from a2a.acp_host import config
from a2a.acp_host.models import HostedSession
from a2a.event_kinds import EventKind
from a2a.lifecycle import TERMINAL
from a2a.models import Message, Suspension, Task, TaskEvent
from a2a.runtime import leases


def lease_seconds() -> float:
    return conf.ACP_HOST.lease_seconds


def claim_sessions(me: str, held: list[str], limit: int) -> list[tuple[str, str]]:
    """Take the sessions of open tasks of configured agents that nobody holds (or whose
    holder stopped renewing): one conditional update each, so two supervisors never both
    win one. Returns (task id, agent) of each taken."""
    now = timezone.now()
    free = Q(holder="") | Q(holder_until__lt=now)
    rows = list(
        HostedSession.objects.filter(free, agent__in=list(config.agents()))
        .exclude(task__state__in=list(TERMINAL))
        .exclude(task_id__in=held)
        .values_list("task_id", "holder", "holder_until", "agent")[:limit]
    )
    until = now + timedelta(seconds=lease_seconds())
    taken = []
    for task_id, holder, holder_until, agent in rows:
        won = HostedSession.objects.filter(
            task_id=task_id, holder=holder, holder_until=holder_until
        ).update(holder=me, holder_until=until)
        if won:
            taken.append((task_id, agent))
            if holder:
                # Taken over: the run lease of the turn it was running is ours to take
                # now, not when that lease runs out too. It may outlive the hold by up to
                # a third of the lease (a turn claims it between two renewals), and the
                # session would then look again only IDLE_SECONDS later: 25 s, not 15,
                # from a SIGKILL to the takeover (issue 30).
                leases.let_go(task_id, holder)
    return taken


def renew(me: str, task_ids: list[str]) -> set[str]:
    """Extend the hold on our sessions (and the lease of any turn we run); returns the
    ids no longer ours (a takeover after we stalled longer than the lease)."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    HostedSession.objects.filter(task_id__in=task_ids, holder=me).update(holder_until=until)
    leases.extend(task_ids, until, me)
    ours = set(
        HostedSession.objects.filter(task_id__in=task_ids, holder=me).values_list(
            "task_id", flat=True
        )
    )
    return set(task_ids) - ours


def let_go(task_id: str, me: str) -> None:
    """This supervisor stops holding the session (the task ended, or it is stopping): the
    session and any turn lease it had are free for another."""
    HostedSession.objects.filter(task_id=task_id, holder=me).update(holder="", holder_until=None)
    leases.let_go(task_id, me)


def session(task_id: str) -> HostedSession:
    return HostedSession.objects.get(pk=task_id)


def save(row: HostedSession, *fields: str) -> None:
    row.save(update_fields=[*fields, "updated_at"])


@dataclass
class Snapshot:
    """What a held session's loop decides from, read in one go."""

    state: str
    suspension: Suspension | None  # the current one (paused or parked), if any
    wakeups: int
    served: int
    lease_owner: str
    next_message: Message | None  # the first user message not yet handed to the agent
    more_messages: bool  # another one waits after it
    last_resumed: Suspension | None  # the newest suspension that ended by a resume
    input_request: dict[str, Any] | None  # the open question, if any


def snapshot(task_id: str, consumed: int) -> Snapshot | None:
    task = Task.objects.select_related("current_suspension").filter(pk=task_id).first()
    if task is None:
        return None
    lease = leases.counts(task_id) or {"wakeups": 0, "served": 0, "owner": ""}
    waiting: list[Message] = []
    if task.state not in TERMINAL:
        # answers to input requests are the permissions' outcomes, never prompts
        answers = set(
            TaskEvent.objects.filter(task_id=task_id, kind=EventKind.INPUT_PROVIDED).values_list(
                "data__messageSeq", flat=True
            )
        )
        waiting = list(
            Message.objects.filter(task_id=task_id, role="user", seq__gt=consumed)
            .exclude(seq__in=[a for a in answers if isinstance(a, int)])
            .order_by("seq")[:2]
        )
    last = (
        Suspension.objects.filter(task_id=task_id, ending=Suspension.Ending.RESUMED)
        .order_by("-id")
        .first()
    )
    return Snapshot(
        state=task.state,
        suspension=task.current_suspension,
        wakeups=lease["wakeups"],
        served=lease["served"],
        lease_owner=lease["owner"],
        next_message=waiting[0] if waiting else None,
        more_messages=len(waiting) > 1,
        last_resumed=last,
        input_request=task.input_request,
    )


def task_state(task_id: str) -> str | None:
    return Task.objects.filter(pk=task_id).values_list("state", flat=True).first()


def start_turn(row: HostedSession, consumed: int | None, me: str) -> bool:
    """Mark a turn open (and the message it hands over as consumed) BEFORE sending it: if
    this process dies after, the next holder knows not to send it again. Only while `me`
    holds the session, and never backwards: False means another supervisor took it over
    (ours lapsed), and nothing may be sent."""
    fields: dict[str, Any] = {"turn_open": True, "updated_at": timezone.now()}
    if consumed is not None:
        fields["consumed"] = Greatest(F("consumed"), consumed)
    if not HostedSession.objects.filter(pk=row.pk, holder=me).update(**fields):
        return False
    row.refresh_from_db(fields=["consumed", "turn_open"])
    return True


def end_turn(row: HostedSession) -> None:
    row.turn_open = False
    save(row, "turn_open")
