"""The AG-UI projection of A2A tasks, kept in the database so every process and every
client sees the same view.

- ViewTask: `/view/tasks/<taskId>` (its JSON `entry` is exactly what clients hold), for
  the tasks in the live view (`in_view`): open ones and the recently finished.
- Interrupt: input requests (`input-<taskId>-<n>`) and pauses (`<handle>`), kept after they
  are resolved for the timeline; `pending` ones are `/view/pendingInterrupts/<id>`.
- AguiEvent: the AG-UI events the projector emitted, in order, with the view's version,
  so streams and sockets replay what they missed and spot gaps.
- LogRetention: how far the retention job (agui.retention) has deleted the log, so
  readers that had not yet read what it deleted know to start again from a snapshot.
- AguiThread / AguiRun: `{threadId, runId} -> taskId` for the AG-UI run endpoint. These
  identifiers never reach A2A payloads.

Written only by the projection (`agui.projection` with `agui.projector`'s handlers, after
the A2A writer's commit, in a transaction of its own), the run bridge, and the log's
retention (`agui.retention`, which deletes old AguiEvent rows).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q, Value

from a2a.models import Task

# The rows of the live view, as every read of it filters them. Written `in_view = true`
# on purpose: Django writes `in_view=True` as the bare column (`WHERE "in_view"`), which
# SQLite cannot match to an index's first column, so it picked the status index and read
# and sorted every row that ever was in the view — the finishing writer's eviction read
# grew with the database (10 ms a task at 3,000 tasks, 25 ms at 44,000). As an equality
# both databases seek `viewtask_live` (in_view, status, updated_at) and read the live rows
# only (docs/production.md, "Scale").
IN_VIEW = Q(in_view=Value(True))
# Interrupts waiting for an answer, and those answered or withdrawn: written as
# equalities for the same reason, so `interrupt_kind_pending` is sought on SQLite too.
PENDING = Q(pending=Value(True))
RESOLVED = Q(pending=Value(False))


class ViewTask(models.Model):
    """One task's view entry. The row outlives the entry's place in the live view: a
    finished task leaves `/view/tasks` after a while (`in_view` false, `version` one past
    its last change: the version of its `remove` delta), yet the board's queries and the
    timeline still read its entry here.

    `version` counts the view's own changes of the task (+1 per projection pass, +1 for
    the eviction): a pass may fold several task versions into one change, and clients
    must still see versions without gaps (docs/design/projection-after-commit.md, D8).
    `task_version` is the task version the entry reflects, and `event_id` the id of the
    last TaskEvent projected: the projection's per-task cursor. Both are null on rows
    written before the projection ran after commit (read as `version`)."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, primary_key=True)
    entry = models.JSONField()
    status = models.CharField(max_length=24, db_index=True)
    version = models.PositiveIntegerField()
    updated_at = models.DateTimeField(db_index=True)
    # db_default: rows inserted by a server still running the previous release (a rolling
    # deploy) are in the view, as they were then.
    in_view = models.BooleanField(default=True, db_default=True)
    task_version = models.PositiveIntegerField(null=True, blank=True)
    event_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            # the live view's reads: its entries, and the finished ones, newest first
            models.Index(fields=["in_view", "status", "updated_at"], name="viewtask_live"),
        ]

    def __str__(self) -> str:
        return f"view {self.task_id}"


class Interrupt(models.Model):
    class Kind(models.TextChoices):
        INPUT_REQUEST = "INPUT_REQUEST"
        PAUSE = "PAUSE"

    interrupt_id = models.CharField(primary_key=True, max_length=120)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="interrupts")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    request_id = models.CharField(max_length=128, blank=True, default="")
    reason = models.CharField(max_length=64)
    content = models.JSONField()  # the ACTIVITY content clients hold
    pending = models.BooleanField(default=True, db_index=True)
    created_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "interrupt_id"]
        indexes = [
            # the inbox and the board: pending input requests, oldest first…
            models.Index(fields=["kind", "pending", "created_at"], name="interrupt_kind_pending"),
            # …and the inbox's most recently resolved ones
            models.Index(
                fields=["kind", "pending", "-resolved_at", "-interrupt_id"],
                name="interrupt_kind_resolved",
            ),
        ]

    def __str__(self) -> str:
        return self.interrupt_id


class AguiEvent(models.Model):
    """One emitted AG-UI event (its JSON, camelCase) for one task at one view version
    (ViewTask.version: the column keeps its old name, `task_version`, so the upgrade
    rewrites no table)."""

    # no index of its own: aguievent_task_id starts with task (agui migration 0008)
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="agui_events", db_index=False
    )
    version = models.PositiveIntegerField(db_column="task_version")
    type = models.CharField(max_length=32)
    event = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["task", "id"], name="aguievent_task_id")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.type} {self.task_id}@{self.version}"


class LogRetention(models.Model):
    """One row (pk 1): where the AguiEvent retention stands (agui/retention.py).

    `through_updated_at` / `through_task`: the scan position over finished tasks, in (updated_at,
    task_id) order — every task before it that had left the view has no log rows left
    (those of an open run aside), so a tick never reads them again. `horizon`: the
    highest AguiEvent id deleted; a reader whose cursor is below it may have missed rows
    and starts from a fresh snapshot (agui/fanout.py)."""

    through_updated_at = models.DateTimeField(null=True, blank=True)
    through_task = models.CharField(max_length=64, blank=True, default="")
    horizon = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"AG-UI log pruned through #{self.horizon}"


class AguiThread(models.Model):
    thread_id = models.CharField(primary_key=True, max_length=128)
    context_id = models.CharField(max_length=128)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.thread_id


class AguiRun(models.Model):
    run_id = models.CharField(primary_key=True, max_length=128)
    thread = models.ForeignKey(AguiThread, on_delete=models.CASCADE, related_name="runs")
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=16, blank=True, default="")

    def __str__(self) -> str:
        return self.run_id


class SearchDoc(models.Model):
    """One task's search document: what the history page searches (agui/search.py,
    docs/dashboard.md "History and search"), for every task of any age, finished or not.

    Written by the projection's pass (agui.projection, after the A2A writer's commit, with
    the view row), and only when something searched changed: a message's text, the state,
    the status text, who acted, a reason. A rewrite deletes the row and inserts it again,
    so `id` grows with each change and "newest change first" is `id` descending: keyset
    pages on the primary key, and on SQLite the FTS5 index's own rowid order
    (agui_searchdoc_fts, an external-content table kept by triggers). On PostgreSQL a
    stored tsvector column `search` (generated from the text columns, `who` weighted 'A')
    and its GIN index are added by migration 0007: neither is in this model, so the ORM
    never writes them and SQLite has no such column."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=24)
    skill = models.CharField(max_length=64, blank=True, default="")
    origin = models.CharField(max_length=16, blank=True, default="")
    context_id = models.CharField(max_length=128)
    updated_at = models.DateTimeField()  # the task's, when this document was written
    title = models.CharField(max_length=200, blank=True, default="")
    status = models.TextField(blank=True, default="")  # the agent's last words, cut
    who = models.TextField(blank=True, default="")  # everyone who acted, "kind:name" each
    ids = models.TextField(blank=True, default="")  # task id, context id, origin reference
    body = models.TextField(blank=True, default="")  # messages' text and reasons, in order
    through_seq = models.PositiveIntegerField(default=0)  # messages in `body` up to this seq

    class Meta:
        indexes = [
            # filters without words: each with the newest change first
            models.Index(fields=["state", "-id"], name="searchdoc_state"),
            models.Index(fields=["skill", "-id"], name="searchdoc_skill"),
            models.Index(fields=["origin", "-id"], name="searchdoc_origin"),
            models.Index(fields=["context_id", "-id"], name="searchdoc_context"),
        ]

    def __str__(self) -> str:
        return f"search {self.task_id}"
