"""The re-runs of a task from a partial index that holds only re-runs.

Why: the task page lists the newest re-runs of its task (`rerun_of = ?`, newest first).
Nearly every task is no re-run, so the foreign key's whole-column index was one huge key
of NULLs; after ANALYZE, SQLite's planner took it for useless and scanned the task table
instead: 32 ms of the task page's 161 at 100,000 tasks, nothing on an empty database
(`bench/scale.py --ops timeline --explain`; docs/production.md, "Scale"). The partial
index holds the re-runs alone, in the page's order; `rerun_of = ?` implies its condition
on both databases, bound parameter or not, and so do the cascades' lookups (`SET NULL`).
The old index is dropped with DROP INDEX, not AlterField (a2a/schema_ops.py says why).
"""

import django.db.models.deletion
from django.db import migrations, models

from a2a.schema_ops import drop_single_column_indexes, recreate_foreign_key_index


class Migration(migrations.Migration):
    dependencies = [
        ("a2a", "0015_event_kind_actor_sqlite"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="task",
                    name="rerun_of",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reruns",
                        to="a2a.task",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(
                    drop_single_column_indexes("a2a_task", "rerun_of_id"),
                    recreate_foreign_key_index("a2a", "task", "rerun_of"),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                condition=models.Q(("rerun_of__isnull", False)),
                fields=["rerun_of", "-created_at", "-id"],
                name="task_rerun_of",
            ),
        ),
    ]
