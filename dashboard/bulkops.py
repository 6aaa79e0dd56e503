"""Bulk actions at any size (issue 29, item 3; docs/dashboard.md, "Bulk actions").

The selection is what the server evaluates: the board's filters (or a few explicit picks),
never a form field per task (cancelling 1,913 tasks once answered HTTP 400
TooManyFieldsSent, and nothing was done or audited). So:

- `select` reads the tasks the action would change, in the live view (every open task is
  there), by the filters in SQL on `viewtask_live` and the task's columns; a search (`q`)
  is the board's rule (selectors.search_match) over the entries those read. At most
  TASKDECK_BULK_MAX + 1 ids are read: past the bound the action is refused with a message
  saying so. What the filter matches but the action would not change is counted by state,
  with why (the preview says "12 will be skipped: already finished").
- `start` fixes the selection when the operator confirms: one BulkOperation and a BulkItem
  per task, in one transaction, and only if the selection still has the count the preview
  showed (else the preview is shown again with the new count): the preview's number is
  what is acted on.
- `run_batch` acts on the next TASKDECK_BULK_BATCH items in one transaction: the operation's
  row locked (one batch of an operation at a time, whoever runs it), each task through
  `a2a.services` in a savepoint of its own (the services lock the task's row and check
  the move again: a task that ended since the preview is refused, and only it rolls back),
  each outcome written on its item with an AuditEntry (refusals too), the progress counts
  bumped, all committed together. A batch that dies commits nothing; its items stay
  waiting for the next run.
- Where it runs (TASKDECK_BULK_RUN): a thread of the web process started after the commit
  (`thread`, the default; the page polls the progress), or in the request (`inline`, the
  test suite). The scheduler's periodic job `resume_stale` takes over an operation whose
  runner has not written a batch for STALE_SECONDS (its process died).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.db.models import Count
from django.utils import timezone

from a2a import conf, periodic, services
from a2a.lifecycle import State
from agui.models import IN_VIEW, ViewTask
from dashboard import actions, selectors
from dashboard.models import AuditEntry, BulkItem, BulkOperation
from dashboard.vocabulary import verb

log = logging.getLogger(__name__)

PICKS_MAX = 500  # explicit picks (one field each): the board's largest page
SAMPLE = 50  # tasks the preview lists by name
STALE_SECONDS = 30.0  # a running operation with no batch for this long is taken over
RESUME_EVERY_SECONDS = 5.0
PACE = periodic.Paced(RESUME_EVERY_SECONDS)


class TooMany(ValueError):
    """The selection is over TASKDECK_BULK_MAX tasks."""

    def __init__(self, bound: int) -> None:
        super().__init__(
            f"The filter matches more than {bound:,} tasks, the most one bulk action acts on "
            "(TASKDECK_BULK_MAX). Narrow it (a state, an agent, a search) and act in parts."
        )
        self.bound = bound


class Changed(ValueError):
    """The selection no longer has the count the operator confirmed."""

    def __init__(self, expected: int, now: int) -> None:
        super().__init__(
            f"The selection changed since the preview: {now:,} tasks now, not {expected:,}. "
            "Check the new count and confirm again."
        )
        self.now = now


def eligible_states(action: str) -> list[str]:
    """The states the action changes (the services' state machine, as the preview says)."""
    return [str(s) for s in State if selectors.skip_reason(action, str(s)) is None]


@dataclass
class Selection:
    """What a bulk action would do: the tasks it would change (`ids`, newest change first;
    `sample`: the first entries, to list by name) and, of those the filter matches, how
    many it would leave alone and why (`skipped`: why -> count)."""

    ids: list[str] = field(default_factory=list)
    sample: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    matched: dict[str, str] = field(default_factory=dict)  # sample's task id -> field hit

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def skipped_count(self) -> int:
        return sum(self.skipped.values())


def _filtered(f: selectors.Filters, states: list[str]):
    """The live view's rows in `states` (narrowed by the filter's state) matching the
    filter's columns; a search is applied by the caller, over the entries."""
    if f.state == "paused":
        states = [s for s in states if s in selectors.PAUSED_STATES]
    elif f.state:
        states = [s for s in states if s == f.state]
    rows = ViewTask.objects.filter(IN_VIEW, status__in=states)
    if f.skill:
        rows = rows.filter(task__skill=f.skill)
    if f.context:
        rows = rows.filter(task__context_id=f.context)
    if f.origin:
        rows = rows.filter(task__origin=f.origin)
    return rows


def select(action: str, f: selectors.Filters, picks: list[str] | None = None) -> Selection:
    """The tasks `action` would change among those the filters match (or among `picks`),
    TooMany past the bound. Reads at most the bound + 1 ids (with their entries when a
    search must look at them), and one count per state for what it would skip."""
    bound = conf.TASKDECK.bulk_max
    doing = eligible_states(action)
    rows = _filtered(f, doing).order_by("-updated_at", "-task_id")
    other = _filtered(f, [str(s) for s in State if str(s) not in doing])
    if picks is not None:
        rows, other = rows.filter(task_id__in=picks), other.filter(task_id__in=picks)
        f = selectors.Filters()  # picks are what the operator ticked, as they are
    sel = Selection()
    if f.q:  # the board's search rule, over the entries (the matches only are kept)
        for task_id, entry in rows.values_list("task_id", "entry").iterator(chunk_size=500):
            if (hit := selectors.search_match(entry, f.q)) is None:
                continue
            sel.ids.append(task_id)
            if len(sel.sample) < SAMPLE:
                sel.sample.append(entry)
                sel.matched[task_id] = hit
            if len(sel.ids) > bound:
                raise TooMany(bound)
        for status, entry in other.values_list("status", "entry").iterator(chunk_size=500):
            if selectors.search_match(entry, f.q) is not None:
                why = selectors.skip_reason(action, status) or "not eligible"
                sel.skipped[why] = sel.skipped.get(why, 0) + 1
    else:
        sel.ids = list(rows.values_list("task_id", flat=True)[: bound + 1])
        if len(sel.ids) > bound:
            raise TooMany(bound)
        sel.sample = list(rows.values_list("entry", flat=True)[:SAMPLE])
        for status, n in other.order_by().values_list("status").annotate(n=Count("pk")):
            why = selectors.skip_reason(action, status) or "not eligible"
            sel.skipped[why] = sel.skipped.get(why, 0) + n
    if picks is not None:
        found = set(ViewTask.objects.filter(task_id__in=picks).values_list("task_id", flat=True))
        gone = len([p for p in set(picks) if p not in found])
        if gone:
            sel.skipped["no such task in the live view"] = gone
    return sel


def start(
    user,
    action: str,
    f: selectors.Filters,
    *,
    picks: list[str] | None,
    reason: str,
    mode: str,
    expected: int,
) -> BulkOperation:
    """Fix the selection and record the operation (Changed when its count is no longer
    `expected`, TooMany past the bound), then run it where TASKDECK_BULK_RUN says. The
    operation, its items and the audit entry of its start commit together."""
    now = timezone.now()
    who = str(actions.actor_of(user))
    described = "the selected tasks" if picks is not None else f"all tasks matching {f.describe()}"
    with transaction.atomic():
        sel = select(action, f, picks)
        if sel.count != expected:
            raise Changed(expected, sel.count)
        op = BulkOperation.objects.create(
            action=action, reason=reason, mode=mode, who=who, selection=described,
            total=sel.count, created_at=now, beat_at=now,
            status=BulkOperation.Status.RUNNING if sel.count else BulkOperation.Status.FINISHED,
            finished_at=None if sel.count else now,
        )  # fmt: skip
        BulkItem.objects.bulk_create(
            (BulkItem(operation=op, task_id=t) for t in sel.ids), batch_size=1000
        )
        AuditEntry.objects.create(
            who=who, action=f"bulk-{action}", task_id=AuditEntry.BULK, reason=reason,
            outcome=AuditEntry.Outcome.OK, at=now,
            detail=f"bulk #{op.pk} started: {verb(action).label.lower()} {sel.count} tasks "
            f"({described}); {sel.skipped_count} left alone",
        )  # fmt: skip
        if sel.count:
            transaction.on_commit(lambda: launch(op.pk))
    return op


def launch(op_id: int) -> None:
    """Run the operation now: in this request (`inline`) or on a thread of its own."""
    if conf.TASKDECK.bulk_run == "inline":
        run(op_id)
        return
    name = f"taskdeck-bulk-{op_id}"
    threading.Thread(target=_thread, args=(op_id,), name=name, daemon=True).start()


def _thread(op_id: int) -> None:
    try:
        run(op_id)
    except Exception:
        log.exception("bulk #%s stopped; the scheduler resumes it", op_id)
    finally:
        connection.close()


def run(op_id: int) -> None:
    """Batches until none is left (another runner's batches interleave harmlessly)."""
    while run_batch(op_id):
        close_old_connections()


def _act(action: str, task_id: str, actor: services.Actor, reason: str, mode: str) -> None:
    if action == "pause":
        services.pause_task(task_id, actor=actor, reason=reason, mode=mode or "finish_step")
    elif action == "resume":
        services.resume_task(task_id, actor=actor, reason=reason)
    elif action == "cancel":
        services.cancel_task(task_id, actor=actor, reason=reason)
    else:
        raise ValueError(action)


def run_batch(op_id: int) -> bool:
    """Act on the operation's next batch, one transaction; whether items are left."""
    with transaction.atomic():
        op = BulkOperation.objects.select_for_update().filter(pk=op_id).first()
        if op is None or op.status == BulkOperation.Status.FINISHED:
            return False
        size = conf.TASKDECK.bulk_batch
        items = list(op.items.filter(outcome="").order_by("id")[:size])
        name = op.who.partition(":")[2] or op.who  # "operator:<name>", as user_actor makes it
        actor = services.Actor("operator", name, tenant=f"user:{name}")
        now = timezone.now()
        audits = []
        for item in items:
            try:
                with transaction.atomic():  # a savepoint: a refusal undoes this task only
                    _act(op.action, item.task_id, actor, op.reason, op.mode)
            except actions.REFUSALS as exc:
                item.outcome, item.why = BulkItem.Outcome.REFUSED, actions.explain(exc)
            except Exception as exc:  # a task the services could not change: said, not hidden
                log.exception("bulk #%s: %s on %s failed", op.pk, op.action, item.task_id)
                item.outcome, item.why = BulkItem.Outcome.REFUSED, f"failed: {exc}"[:500]
            else:
                item.outcome, item.why = BulkItem.Outcome.DONE, ""
            done = item.outcome == BulkItem.Outcome.DONE
            said = verb(op.action).past if done else f"refused: {item.why}"
            audits.append(
                AuditEntry(
                    who=op.who,
                    action=f"bulk-{op.action}",
                    task_id=item.task_id,
                    reason=op.reason,
                    at=now,
                    outcome=AuditEntry.Outcome.OK if done else AuditEntry.Outcome.REFUSED,
                    detail=f"bulk #{op.pk}: {said}",
                )
            )
        BulkItem.objects.bulk_update(items, ["outcome", "why"])
        AuditEntry.objects.bulk_create(audits)
        op.done += sum(1 for i in items if i.outcome == BulkItem.Outcome.DONE)
        op.refused += sum(1 for i in items if i.outcome == BulkItem.Outcome.REFUSED)
        op.beat_at = now
        more = op.items.filter(outcome="").exists()
        if not more:
            op.status, op.finished_at = BulkOperation.Status.FINISHED, now
            AuditEntry.objects.create(
                who=op.who, action=f"bulk-{op.action}", task_id=AuditEntry.BULK,
                reason=op.reason, at=now,
                outcome=AuditEntry.Outcome.OK if op.done else AuditEntry.Outcome.REFUSED,
                detail=f"bulk #{op.pk} finished: {op.done} {verb(op.action).past}, "
                f"{op.refused} refused, of {op.total}",
            )  # fmt: skip
        op.save(update_fields=["done", "refused", "beat_at", "status", "finished_at"])
    return more


def resume_stale() -> int:
    """The scheduler's periodic job: run the operations whose runner stopped (no batch for
    STALE_SECONDS: its process died) to their end, here. How many it resumed."""
    if not PACE.due():
        return 0
    PACE.ran(more=False)
    stale = timezone.now() - timedelta(seconds=STALE_SECONDS)
    ids = list(
        BulkOperation.objects.filter(status=BulkOperation.Status.RUNNING, beat_at__lt=stale)
        .order_by("beat_at")
        .values_list("pk", flat=True)[:10]
    )
    for op_id in ids:
        log.warning("bulk #%s had stopped; resuming it", op_id)
        run(op_id)
    return len(ids)


def progress(op: BulkOperation) -> dict[str, Any]:
    """What the progress page shows and polls (JSON)."""
    refusals = dict(
        op.items.filter(outcome=BulkItem.Outcome.REFUSED)
        .order_by()
        .values_list("why")
        .annotate(n=Count("pk"))
        .values_list("why", "n")
    )
    return {
        "id": op.pk,
        "action": op.action,
        "total": op.total,
        "done": op.done,
        "refused": op.refused,
        "finished": op.status == BulkOperation.Status.FINISHED,
        "refusals": refusals,
    }
