"""Drop AguiEvent's single-column task_id index (two on PostgreSQL): `aguievent_task_id`
(task, id) serves every lookup and cascade it did, and at a million tasks it was
2 × 138 MB that every emitted event updated and no query read (docs/production.md,
"Scale"; a2a 0014 does the same for messages, events and artifacts, and says why not
AlterField)."""

import django.db.models.deletion
from django.db import migrations, models

from a2a.schema_ops import drop_single_column_indexes, recreate_foreign_key_index


class Migration(migrations.Migration):
    dependencies = [
        ("agui", "0007_search_doc"),
        ("a2a", "0014_task_fk_indexes_covered"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="aguievent",
                    name="task",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="agui_events",
                        to="a2a.task",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(
                    drop_single_column_indexes("agui_aguievent", "task_id"),
                    recreate_foreign_key_index("agui", "aguievent", "task"),
                ),
            ],
        ),
    ]
