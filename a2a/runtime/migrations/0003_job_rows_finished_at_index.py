"""An index on the job rows' finished_at, for the scheduler's retention (scheduler.prune).

django-tasks-db indexes its rows for claiming only, so `finished_at < cutoff` read every
row of a table the size of all past work. The model is the library's, so the index is
made here, by name, on both databases (CREATE INDEX IF NOT EXISTS: SQLite and PostgreSQL).
"""

from django.db import migrations

TABLE = "django_tasks_database_dbtaskresult"
INDEX = "taskdeck_jobs_finished_at"


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0002_beats_and_one_pending_job"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON {TABLE} (finished_at)",
            f"DROP INDEX IF EXISTS {INDEX}",
        ),
    ]
