"""A hosted agent's session as the supervisors keep it: who holds it, which ACP session it
is, and how far the conversation has been handed to the agent.

Only the supervisor and the hooks write these rows (bookkeeping of the host, not task
state); the task itself changes only through `a2a.services`.
"""

from __future__ import annotations

from django.db import models

from a2a.models import Task


class HostedSession(models.Model):
    """One task of a hosted ACP agent = one ACP session of that agent.

    `holder` is the supervisor (`host:pid`) that runs the agent's process for it, until
    `holder_until` (extended by its heartbeat): exactly one at a time, taken with a
    conditional update; a supervisor that dies stops extending it, and another takes the
    session over with `session/resume` or `session/load` when the agent offers them.

    `consumed` is the seq of the last user message handed to the agent (as a prompt, or as
    the answer to its permission request): a prompt is marked here, in its own committed
    transaction, BEFORE it is sent — so a supervisor killed mid-turn never leads another
    to send it again (`turn_open` tells the next holder a turn was cut off).
    """

    task = models.OneToOneField(Task, on_delete=models.CASCADE, primary_key=True)
    agent = models.CharField(max_length=64)  # the skill id of config.HostedAgent
    session_id = models.CharField(max_length=200, blank=True, default="")
    holder = models.CharField(max_length=64, blank=True, default="", db_index=True)
    holder_until = models.DateTimeField(null=True, blank=True)
    consumed = models.PositiveIntegerField(default=0)
    turn_open = models.BooleanField(default=False)
    # the suspension (its id) this host last acted on: sent session/suspend or cancel for
    acted_on = models.BigIntegerField(null=True, blank=True)
    # the handle the agent gave for its suspension (session/suspend's answer), echoed back
    # on session/resume
    agent_handle = models.CharField(max_length=200, blank=True, default="")
    # the last suspension whose resume was passed on to the agent (session/resume)
    resumed_to_agent = models.BigIntegerField(null=True, blank=True)
    # the agent's `initialize` answer: agentCapabilities (what it can load, resume, suspend)
    capabilities = models.JSONField(default=dict)
    takeovers = models.PositiveIntegerField(default=0)
    # when its agent's process was stopped for being idle (a2a.acp_host.idle); cleared when
    # the next message starts it again. Kept here: another supervisor may be the one that
    # starts it, and must say "started again", not "took the session over".
    idle_stopped_at = models.DateTimeField(null=True, blank=True)
    # the agent's "Always allow" / "Always reject" answers, as the operator chose them:
    # {memory key: {"kind": "allow_always"|"reject_always", "requestId", "at"}}
    # (a2a.acp_host.permission_memory); a later request of the same key is answered from here
    remembered = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "hosted ACP session"

    def __str__(self) -> str:
        return f"{self.agent} session of {self.task_id} ({self.holder or 'free'})"
