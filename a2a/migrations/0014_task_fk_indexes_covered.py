"""Drop the single-column task_id indexes of messages, events and artifacts: each table
has an index that starts with task_id and serves every lookup and cascade the single one
did (message_task_seq, event_task_id, artifact_task_id), so the single one (two on
PostgreSQL: the plain index and its `_like` twin) only cost every insert two more B-tree
updates — at a million tasks 2 × 121 MB of event index and 2 × 107 MB of message index
that no query read (docs/production.md, "Scale"). Dropped with DROP INDEX, not
AlterField, which on SQLite would copy each table (a2a/schema_ops.py)."""

import django.db.models.deletion
from django.db import migrations, models

from a2a.schema_ops import drop_single_column_indexes, recreate_foreign_key_index

TABLES = {"message": "messages", "taskevent": "events", "artifact": "artifacts"}


def _fk(related_name: str) -> models.ForeignKey:
    return models.ForeignKey(
        db_index=False,
        on_delete=django.db.models.deletion.CASCADE,
        related_name=related_name,
        to="a2a.task",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("a2a", "0013_task_state_since"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name=model, name="task", field=_fk(related))
                for model, related in TABLES.items()
            ],
            database_operations=[
                migrations.RunPython(
                    drop_single_column_indexes(f"a2a_{model}", "task_id"),
                    recreate_foreign_key_index("a2a", model, "task"),
                )
                for model in TABLES
            ],
        ),
    ]
