"""How many tasks each owner has in each state, kept without a hot row
(docs/design/a2a-surface.md, D27).

Counting a million rows costs what a million rows cost: ListTasks' `totalSize` took 160 to
200 ms of each call at a million tasks. So the writer keeps the counts: every change of a
task's state appends one `TaskCountChange` (owner, from_state, to_state) in the writer's
transaction (`changed`, called by `_core.record`). A counter row updated by every writer
would serialise a tenant's writers on PostgreSQL (each waits for the row lock of the one
before to commit); an append never waits. The scheduler's periodic job (`compact_now_and_
then`, registered with a2a.periodic by A2AConfig.ready()) folds the changes into
`TaskCount` (owner, state, n) and deletes them, COMPACT_BATCH at a time, so a reader sums
the few counter rows of its owner plus the changes not yet folded in
(`a2a.selectors.count_tasks`), one statement whatever the number of tasks.

- Exact: a change and its count commit together, and the compaction moves a change's +1/-1
  from one table to the other in one transaction, so every snapshot sees each change
  counted once. Two compactors take disjoint rows (`SKIP LOCKED`); the upsert adds.
- Rows written around the services (a restore, bulk SQL, a benchmark's fill, a rolling
  deploy with a server older than the counts) are not counted: `recount` (`manage.py
  recount_tasks`) counts the tasks again under a lock that makes writers wait a moment.
"""

from __future__ import annotations

from collections import Counter

from django.db import connection, transaction

from a2a import periodic
from a2a.models import Task, TaskCount, TaskCountChange
from a2a.prepared import PreparedInsert

COMPACT_EVERY_SECONDS = 10.0
COMPACT_BATCH = 5000  # changes per transaction: a backlog drains in steps, no long lock
PACE = periodic.Paced(COMPACT_EVERY_SECONDS)
IN_SLICE = 900  # ids per DELETE … IN (old SQLite builds allow 999 parameters)

_NEW_CHANGE = PreparedInsert(TaskCountChange)  # one per change of state (a2a/prepared.py)


def changed(task: Task, from_state: str) -> tuple[str, list]:
    """Count `task` as having left `from_state` ("" for a new task) for its state now: the
    insert, as (sql, params), that the writer runs with its event in its transaction, with
    its row lock held (a2a.services._core.record, PreparedInsert.along)."""
    return _NEW_CHANGE.along(owner=task.owner, from_state=from_state, to_state=task.state)


def _upsert_sql() -> str:
    table = TaskCount._meta.db_table
    return (
        f'INSERT INTO {table} ("owner", "state", "n") VALUES (%s, %s, %s) '
        f'ON CONFLICT ("owner", "state") DO UPDATE SET "n" = {table}."n" + EXCLUDED."n"'
    )


def compact(limit: int = COMPACT_BATCH) -> int:
    """Fold up to `limit` changes, oldest first, into the counts and delete them; how many.
    One transaction: a reader sees them either as changes or in the counts."""
    with transaction.atomic():
        rows = list(
            TaskCountChange.objects.select_for_update(skip_locked=True)
            .order_by("id")
            .values_list("id", "owner", "from_state", "to_state")[:limit]
        )
        if not rows:
            return 0
        sums: Counter[tuple[str, str]] = Counter()
        for _, owner, from_state, to_state in rows:
            sums[(owner, to_state)] += 1
            if from_state:
                sums[(owner, from_state)] -= 1
        ids = [r[0] for r in rows]
        for start in range(0, len(ids), IN_SLICE):
            TaskCountChange.objects.filter(pk__in=ids[start : start + IN_SLICE]).delete()
        with connection.cursor() as cur:
            cur.executemany(
                _upsert_sql(),
                [(owner, state, n) for (owner, state), n in sorted(sums.items()) if n],
            )
    return len(rows)


def compact_now_and_then() -> int:
    """`compact`, the scheduler's periodic job: at most once every COMPACT_EVERY_SECONDS per
    process, and again at the next tick while a full batch says more are waiting."""
    return PACE.batch(compact, COMPACT_BATCH)


def recount() -> int:
    """Count every owner's tasks in each state again, from the tasks themselves; the number
    of counter rows. Writers that change a state wait while it runs (a second or so at a
    million tasks on PostgreSQL): on PostgreSQL the changes' table is locked against
    writes first, so a change committed before is in the recount and one after is a
    change; on SQLite the transaction holds the only write lock."""
    changes, counts = TaskCountChange._meta.db_table, TaskCount._meta.db_table
    with transaction.atomic(), connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute(f"LOCK TABLE {changes} IN EXCLUSIVE MODE")
        cur.execute(f"DELETE FROM {changes}")
        cur.execute(f"DELETE FROM {counts}")
        cur.execute(
            f'INSERT INTO {counts} ("owner", "state", "n") '
            f'SELECT "owner", "state", COUNT(*) FROM {Task._meta.db_table} '
            f'GROUP BY "owner", "state"'
        )
        return cur.rowcount
