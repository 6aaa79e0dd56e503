"""The A2A task model and nothing else.

Rows are written only by `a2a.services` (docs/design/house-rules.md, D1). History rows
(Message, Suspension, TaskEvent) are appended, never rewritten, except a Suspension's
"how it ended" columns, which are filled exactly once.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

from a2a.event_kinds import EventKind
from a2a.lifecycle import State


def new_id() -> str:
    return str(uuid.uuid4())


def new_handle() -> str:
    return f"suspend-{uuid.uuid4()}"


class Task(models.Model):
    """One A2A task. `version` grows by one with every change, so readers can tell
    whether what they hold is current without comparing every field."""

    class Origin(models.TextChoices):
        """The door a task came in by (the dashboard shows it)."""

        A2A = "a2a", "A2A"
        AGUI = "agui", "AG-UI"
        ACP = "acp", "ACP session"
        DASHBOARD = "dashboard", "Dashboard"

    id = models.CharField(primary_key=True, max_length=64, default=new_id, editable=False)
    context_id = models.CharField(max_length=128, db_index=True)
    skill = models.CharField(max_length=64, blank=True, default="")
    state = models.CharField(
        max_length=24, choices=[(s.value, s.value) for s in State], default=State.SUBMITTED
    )
    status_message = models.ForeignKey(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_timestamp = models.DateTimeField()
    metadata = models.JSONField(default=dict, blank=True)
    # The open input request (docs/design/input-requests.md, D40) answers are validated
    # against; null otherwise.
    input_request = models.JSONField(null=True, blank=True)
    input_request_count = models.PositiveIntegerField(default=0)
    # Last progress the agent reported: {"done": n, "total": m} or null.
    progress = models.JSONField(null=True, blank=True)
    current_suspension = models.ForeignKey(
        "Suspension", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    version = models.PositiveIntegerField(default=1)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(db_index=True)
    # Where it came from: the door, that door's own reference (an ACP session id, an AG-UI
    # thread id) and a title to show for it (an ACP session's title); blank when unknown.
    origin = models.CharField(max_length=16, choices=Origin.choices, blank=True, default="")
    origin_ref = models.CharField(max_length=128, blank=True, default="")
    origin_title = models.CharField(max_length=200, blank=True, default="")
    # Whose task it is: the tenant of the principal that created it ("key:<owner>" for an
    # API key's owner, "user:<name>" for a signed-in user; "" for tasks made by the system).
    # Restricted principals see and act on their own tenant's tasks only (a2a/access.py).
    owner = models.CharField(max_length=160, blank=True, default="", db_index=True)
    # A re-run (or a retry from its failed step) of an ended task: the task it repeats,
    # and which of the two (issue 29; a2a.services.rerun_task). The partial index
    # `task_rerun_of` (Meta) answers "re-run as …" on the original's page.
    rerun_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reruns",
        db_index=False,
    )
    rerun_kind = models.CharField(
        max_length=8, blank=True, default="", choices=[("rerun", "re-run"), ("retry", "retry")]
    )

    class Meta:
        permissions = [("operate_task", "Can pause, resume, cancel and answer tasks")]
        indexes = [
            models.Index(fields=["state", "-updated_at"], name="task_state_updated"),
            models.Index(fields=["-updated_at", "-id"], name="task_updated_id"),
            # a tenant's ListTasks pages (restricted keys see their own tasks), with and
            # without a state filter: newest first, from an index at any depth
            models.Index(fields=["owner", "-updated_at", "-id"], name="task_owner_updated"),
            models.Index(
                fields=["owner", "state", "-updated_at", "-id"], name="task_owner_state_updated"
            ),
            # operator alerts (a2a/alerts/detect.py): "input-required since before T" and
            # "failed since after T" are ranges of this index, however many tasks there are
            models.Index(fields=["state", "status_timestamp"], name="task_state_since"),
            # the re-runs of a task, newest first (the task page): only re-runs are in it.
            # On a whole-column index nearly every row is NULL, and SQLite's planner,
            # after ANALYZE, scanned the table instead (a2a 0016)
            models.Index(
                fields=["rerun_of", "-created_at", "-id"],
                condition=models.Q(rerun_of__isnull=False),
                name="task_rerun_of",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.state})"


class Context(models.Model):
    """Whose a contextId is: the tenant whose task (or ACP session) first used it. Only
    that tenant (and actors who may act on its tasks: operators, agents) may start tasks
    in it, so another tenant cannot add a task to a conversation it learned the id of
    (docs/protocol.md, "Contexts belong to their tenant"). The primary key is what makes
    two tenants racing to start the same contextId end with one owner. Written only by
    `a2a.services.contexts`."""

    context_id = models.CharField(primary_key=True, max_length=128)
    tenant = models.CharField(max_length=160, blank=True, default="")  # a Task.owner
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.context_id} ({self.tenant or '-'})"


class Message(models.Model):
    """A message of a task's history, in arrival order (`seq` counts per task)."""

    # no index of its own: message_task_seq starts with task (a2a migration 0014)
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    seq = models.PositiveIntegerField()
    message_id = models.CharField(max_length=128)
    role = models.CharField(max_length=8, choices=[("user", "user"), ("agent", "agent")])
    parts = models.JSONField()
    metadata = models.JSONField(default=dict, blank=True)
    reference_task_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["task", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["task", "seq"], name="message_task_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.role} message {self.message_id}"


class MessageReceipt(models.Model):
    """A user message a caller delivered, kept for TASKDECK IDEMPOTENCY_HOURS so that the
    same messageId sent again by the same tenant returns the first task instead of doing
    the work twice (a client retrying after a lost answer). Written in the delivery's
    transaction by `a2a.services.receive_message`; the unique constraint is what makes two
    concurrent sends of one message end as one task. See `a2a/services/receipts.py`."""

    tenant = models.CharField(max_length=160, blank=True, default="")  # the Actor's tenant
    message_id = models.CharField(max_length=128)
    # the task the message went to (or started); a deleted task takes its receipts along
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)  # SHA-256 of the message's parts
    # the first delivery's outcome, handed back to a repeat (`Delivered`)
    created = models.BooleanField(default=False)
    answered = models.BooleanField(default=False)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "message_id"], name="receipt_tenant_message"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant or '-'}/{self.message_id} -> {self.task_id}"


class Artifact(models.Model):
    """An output of a task. Appending to an artifact with the same `artifact_id` extends it."""

    # no index of its own: artifact_task_id starts with task (a2a migration 0014)
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="artifacts", db_index=False
    )
    seq = models.PositiveIntegerField()
    artifact_id = models.CharField(max_length=128)
    name = models.CharField(max_length=200, blank=True, default="")
    description = models.TextField(blank=True, default="")
    parts = models.JSONField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["task", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["task", "artifact_id"], name="artifact_task_id"),
        ]

    def __str__(self) -> str:
        return self.name or self.artifact_id


class Suspension(models.Model):
    """One pause of one task: who paused it, why, until when; then how it ended.

    A row per pause, never overwritten, so the whole pause history of a task stays readable.
    """

    class Initiator(models.TextChoices):
        CLIENT = "client"
        AGENT = "agent"

    class Mode(models.TextChoices):
        FINISH_STEP = "finish_step"
        INTERRUPT_IMMEDIATE = "interrupt_immediate"
        WAIT_FOR_COMPLETION = "wait_for_completion"

    class Cause(models.TextChoices):
        EXPLICIT_RESUME = "explicit_resume"
        CONDITION_FIRED = "condition_fired"
        TIMEOUT = "timeout"
        EXTERNAL_EVENT = "external_event"

    class Ending(models.TextChoices):
        RESUMED = "resumed"
        CANCELED = "canceled"
        TIMED_OUT = "timed_out"  # onTimeout: fail
        SUPERSEDED = "superseded"  # an operator hold replaced an agent's park

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="suspensions")
    handle = models.CharField(max_length=80, unique=True, default=new_handle, editable=False)
    initiator = models.CharField(max_length=8, choices=Initiator.choices)
    dialect = models.CharField(max_length=8, default="rfc")
    reason = models.TextField(blank=True, default="")
    mode = models.CharField(max_length=24, choices=Mode.choices, blank=True, default="")
    conditions = models.JSONField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    deadline = models.DateTimeField(null=True, blank=True, db_index=True)
    # The event names that can wake this suspension, copied out of `conditions` so an
    # incoming event finds its sleepers through an index instead of scanning JSON.
    on_event = models.CharField(max_length=200, blank=True, default="", db_index=True)
    trigger_event = models.CharField(max_length=200, blank=True, default="", db_index=True)
    paused_from = models.CharField(max_length=24)
    requested_by = models.CharField(max_length=150)
    metadata = models.JSONField(default=dict, blank=True)
    suspended_at = models.DateTimeField()
    # How it ended: filled once.
    ending = models.CharField(max_length=12, choices=Ending.choices, blank=True, default="")
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.CharField(max_length=150, blank=True, default="")
    cause = models.CharField(max_length=20, choices=Cause.choices, blank=True, default="")
    had_resume_input = models.BooleanField(null=True)
    resume_input = models.JSONField(null=True, blank=True)
    continue_transcript = models.BooleanField(null=True)
    resumed_to = models.CharField(max_length=24, blank=True, default="")

    class Meta:
        ordering = ["task", "suspended_at", "id"]

    def __str__(self) -> str:
        return self.handle

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


# API clients' actions on tasks, as the event log holds them (the dashboard's audit lists
# them: dashboard/selectors.py): a pause, resume, cancel or answer made by an API key or an
# anonymous caller (actor "apikey:<name>" / "anonymous:<name>", a2a.auth). Agents' own
# parks, the scheduler's timeouts and dashboard users are not. TaskEvent's partial indexes
# hold exactly these rows, and the audit filters with this very Q: PostgreSQL uses a partial
# index only when the query's WHERE implies the index's, which one Q rendered by one lookup
# (`startswith`: `actor::text LIKE 'apikey:%'`) makes certain (tests/dashboard/
# test_audit_index.py). SQLite builds them too but never uses them for Django's queries,
# whose values are bound parameters it cannot match to an index's WHERE.
API_ACTOR_KINDS = ("apikey", "anonymous")
API_ACTION_KINDS = (
    EventKind.PAUSED.value,
    EventKind.RESUMED.value,
    EventKind.CANCELED.value,
    EventKind.INPUT_PROVIDED.value,
)
API_ACTIONS = Q(
    Q(*(Q(actor__startswith=f"{kind}:") for kind in API_ACTOR_KINDS), _connector=Q.OR),
    kind__in=API_ACTION_KINDS,
)


class TaskEvent(models.Model):
    """Append-only log of every change to every task: the audit trail and the stream cursor.

    `id` orders events globally; within one task the order is also commit order, because
    every writer holds the task's row lock while it appends. `to_state` is the task's state
    after the event; `from_state` equals it unless the event changed the state.
    """

    # no index of its own: event_task_id starts with task (a2a migration 0014)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events", db_index=False)
    kind = models.CharField(max_length=32, db_index=True)
    from_state = models.CharField(max_length=24, blank=True, default="")
    to_state = models.CharField(max_length=24, blank=True, default="")
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    task_version = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["task", "id"], name="event_task_id"),
            # the audit page on SQLite, which uses no partial index for a query whose values
            # are bound parameters (Django's): all events, newest first
            models.Index(fields=["-created_at", "-id"], name="event_created_id"),
            # the audit page on PostgreSQL: API clients' actions only (API_ACTIONS, a few per
            # cent of the log), so counting them reads at most the audit's depth and a page
            # reads its rows in order however many events agents and the scheduler add:
            # newest (or oldest) first, and by who either way (case-blind, each name's newest
            # first: the two directions mix ascending and descending, one index each)
            models.Index(
                fields=["-created_at", "-id"], name="event_api_created_id", condition=API_ACTIONS
            ),
            models.Index(
                Lower("actor"), F("created_at").desc(), name="event_api_who", condition=API_ACTIONS
            ),
            models.Index(
                Lower("actor").desc(),
                F("created_at").desc(),
                name="event_api_who_desc",
                condition=API_ACTIONS,
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.task_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("TaskEvent is append-only")
        super().save(*args, **kwargs)


class ProjectionDue(models.Model):
    """A committed TaskEvent that no projection has consumed yet: the durable half of
    "the projection runs after commit" (docs/design/projection-after-commit.md, D8).

    Inserted by `a2a.services` in the writer's transaction, one row per event, with a plain
    INSERT that never conflicts (the version is bumped under the task's row lock) and
    never waits; deleted by the projection (`agui.projection`) in the transaction that
    projects those versions, so a change is projected once even if a process dies between
    the two commits. No foreign-key constraint: no per-insert probe of the task table, and
    the projection drops the rows of a task that no longer exists. The table holds only the
    backlog (empty when the projection keeps up); the age of its oldest row is the lag."""

    pk = models.CompositePrimaryKey("task", "task_version")
    task = models.ForeignKey(
        Task, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    task_version = models.PositiveIntegerField()
    at = models.DateTimeField()  # the event's created_at: the lag is measured from it

    def __str__(self) -> str:
        return f"due {self.task_id}@{self.task_version}"


class TaskCount(models.Model):
    """How many tasks an owner has in a state, as of the last compaction: ListTasks'
    `totalSize` and the board's totals read these plus the changes not yet folded in
    (`TaskCountChange`), so a count costs the same at 100 tasks and at a million
    (docs/design/a2a-surface.md, D27). Written only by `a2a.services.counts`."""

    owner = models.CharField(max_length=160, blank=True, default="")
    state = models.CharField(max_length=24)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "state"], name="taskcount_owner_state")
        ]

    def __str__(self) -> str:
        return f"{self.owner or '-'} {self.state}: {self.n}"


class TaskCountChange(models.Model):
    """One task entering a state (and leaving `from_state`; "" for a new task), appended
    by the writer in its transaction. Append-only: no row is ever updated, so writers of
    one tenant never wait on each other for a counter row; the scheduler's periodic job
    folds them into `TaskCount` and deletes them (D27)."""

    owner = models.CharField(max_length=160, blank=True, default="")
    from_state = models.CharField(max_length=24, blank=True, default="")
    to_state = models.CharField(max_length=24)

    class Meta:
        indexes = [models.Index(fields=["owner"], name="taskcountchange_owner")]

    def __str__(self) -> str:
        return f"{self.owner or '-'} {self.from_state or '(new)'} -> {self.to_state}"


class ExternalEvent(models.Model):
    """An event posted to Taskdeck (POST /api/events, `manage.py emit_event`): kept with the
    tasks it woke, so the timeline can say why a parked task resumed."""

    name = models.CharField(max_length=200, db_index=True)
    payload = models.JSONField(default=dict, blank=True)
    received_at = models.DateTimeField()
    sent_by = models.CharField(max_length=150)
    woke = models.JSONField(default=list, blank=True)  # [{"taskId", "handle", "cause"}]

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A bearer credential for the JSON-RPC API. Only a SHA-256 digest of the secret is
    stored; the secret is shown once, when the key is created."""

    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"
        AGENT = "agent"
        OPERATOR = "operator"  # sees and acts on every owner's tasks, as dashboard operators do

    name = models.CharField(max_length=100, unique=True)
    # The tenant its tasks belong to: several keys of one client share an owner (and so
    # their tasks); blank means the key's own name.
    owner = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
