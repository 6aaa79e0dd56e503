"""What the scheduler's retention costs at fleet size (docs/production.md, "Retention"):
fills the three tables it prunes by SQL, then times bounded batches and prints the plans
of their reads. Asserts nothing.

    .venv/bin/python bench/retention.py [--scale-out] [--rows N] [--calls 5]

Rows: N job rows and N message receipts spread over the last 7 days, and N AG-UI log rows
(N/5 finished tasks of 5 rows each, spread over the last 30 days; those of the last 36
hours still in the live view). Default N: 1,000,000 on PostgreSQL (`--scale-out`, in a
database of its own, `taskdeck_bench_retention`, dropped at the end), 100,000 on SQLite.
"""

from __future__ import annotations

import argparse
import os
import time

from _harness import configure, drop_db, fresh_db, pg_url

PG_DB = "taskdeck_bench_retention"
DELTA = '{"type":"STATE_DELTA","delta":[]}'  # a log row's event (its size is not the point)


def fill(rows: int) -> None:
    from django.db import connection, transaction

    from a2a import services
    from tests.conftest import AGENT, CLIENT

    tasks, pg = rows // 5, connection.vendor == "postgresql"
    cur = connection.cursor()
    hello = services.IncomingMessage(message_id="seed", parts=[{"kind": "text", "text": "hi"}])
    seed = services.receive_message(hello, actor=CLIENT).task
    services.start_task(seed.id, actor=AGENT)
    services.complete_task(seed.id, actor=AGENT, text="done")
    columns = [c.column for c in seed._meta.concrete_fields]

    def ago(days: int, n: str, total: int) -> str:
        """Evenly from `days` ago to now, the n-th of total (SQL)."""
        if pg:
            return f"now() - interval '{days} days' + ({n} * interval '{days} days' / {total})"
        seconds = f"({n} * {days * 86400}.0 / {total})"
        return (
            f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-{days} days', '+' || {seconds} || ' seconds')"
        )

    def series(total: int, alias: str = "g") -> str:
        """1..total as `alias`.n (SQL)."""
        if pg:
            return f"generate_series(1, {total}) AS {alias}(n)"
        return (
            f"(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {total})"
            f" SELECT n FROM s) {alias}"
        )

    recent = (
        "now() - interval '36 hours'" if pg else "strftime('%Y-%m-%d %H:%M:%f', 'now', '-36 hours')"
    )
    uuid = "gen_random_uuid()" if pg else "lower(hex(randomblob(16)))"
    started = time.monotonic()
    with transaction.atomic():
        picked = []
        for c in columns:
            if c == "id":
                picked.append("'t-' || n")
            elif c in ("status_message_id", "current_suspension_id"):
                picked.append("NULL")
            elif c in ("updated_at", "status_timestamp", "created_at"):
                picked.append(ago(30, "n", tasks))
            else:
                picked.append(c)
        cur.execute(
            f"INSERT INTO a2a_task ({','.join(columns)}) SELECT {','.join(picked)} "
            f"FROM a2a_task, {series(tasks)} WHERE id = '{seed.id}'"
        )
        cur.execute(
            "INSERT INTO agui_viewtask (task_id, entry, status, version, updated_at, in_view) "
            f"SELECT t.id, v.entry, v.status, v.version + 1, t.updated_at, t.updated_at > {recent} "
            f"FROM a2a_task t, agui_viewtask v WHERE v.task_id = '{seed.id}' AND t.id <> v.task_id"
        )
        cur.execute(
            "INSERT INTO agui_aguievent (task_id, task_version, type, event, created_at) "
            f"SELECT t.id, k.n, 'STATE_DELTA', '{DELTA}', t.updated_at "
            f"FROM a2a_task t, {series(5, 'k')} "
            f"WHERE t.id <> '{seed.id}' ORDER BY t.updated_at, k.n"
        )
        cur.execute(
            "INSERT INTO a2a_messagereceipt "
            "(tenant, message_id, task_id, digest, created, answered, created_at) "
            f"SELECT 'key:c', 'm-' || n, 't-' || (1 + n % {tasks}), 'x', {'true' if pg else 1}, "
            f"{'false' if pg else 0}, {ago(7, 'n', rows)} FROM {series(rows)}"
        )
        cur.execute(
            "INSERT INTO django_tasks_database_dbtaskresult (id, status, enqueued_at, started_at, "
            "finished_at, args_kwargs, priority, task_path, worker_ids, queue_name, backend_name, "
            "run_after, return_value, exception_class_path, traceback) "
            f"SELECT {uuid}, 'SUCCESSFUL', f, f, f, '{{\"args\":[],\"kwargs\":{{}}}}', 0, 'x', "
            f"'[]', 'default', 'default', f, NULL, '', '' "
            f"FROM (SELECT {ago(7, 'n', rows)} AS f FROM {series(rows)}) s"
        )
    cur.execute("ANALYZE")
    print(f"filled in {time.monotonic() - started:.1f} s")


def measure(calls: int) -> None:
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from a2a.models import MessageReceipt
    from a2a.runtime import scheduler
    from a2a.services import receipts
    from agui import retention
    from agui.models import AguiEvent, ViewTask

    options = {"analyze": True} if connection.vendor == "postgresql" else {}
    before = timezone.now() - timedelta(hours=24)
    for model in (DBTaskResult, MessageReceipt, AguiEvent):
        print(f"{model.__name__}: {model.objects.count():,} rows")

    def plan(what: str, qs) -> None:
        text = qs.explain(**options)
        print(f"-- plan of {what}'s read:\n{text if len(text) < 2000 else text[:2000] + '…'}")

    def timed(what: str, call) -> None:
        ms, deleted = [], 0
        for _ in range(calls):
            t = time.perf_counter()
            deleted = call()
            ms.append(round((time.perf_counter() - t) * 1000))
        print(f"{what}: {calls} calls of {deleted:,} rows each, ms per call {ms}")

    plan(
        "job rows",
        DBTaskResult.objects.finished()
        .filter(finished_at__lt=before)
        .order_by("finished_at")
        .values("id")[: scheduler.PRUNE_BATCH],
    )
    timed("job rows", lambda: scheduler.prune(24))
    plan(
        "receipts",
        MessageReceipt.objects.filter(created_at__lte=before)
        .order_by("created_at")
        .values("pk")[: receipts.PRUNE_BATCH],
    )
    timed("receipts", receipts.prune)
    scan = ViewTask.objects.filter(updated_at__lt=before).order_by("updated_at", "task_id")
    plan("AG-UI scan", scan.values_list("task_id")[: retention.TASKS_PER_CALL])
    ids = list(scan.values_list("task_id", flat=True)[: retention.TASKS_PER_CALL])
    plan("AG-UI rows", AguiEvent.objects.filter(task_id__in=ids).values_list("id")[:5000])
    timed("AG-UI log rows", lambda: retention.prune().rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true", help="PostgreSQL")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    configure(False)
    if args.scale_out:
        fresh_db(PG_DB)
        os.environ["DATABASE_URL"] = pg_url(PG_DB)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    try:
        fill(args.rows or (1_000_000 if args.scale_out else 100_000))
        measure(args.calls)
    finally:
        if args.scale_out:
            drop_db(PG_DB)


if __name__ == "__main__":
    main()
