"""SQLite: an index on a2a_taskevent (kind, actor) for the audit's count of API clients'
actions.

Why: the audit counts API clients' actions (a2a.models.API_ACTIONS: four kinds, actor
`apikey:`/`anonymous:`) up to its paging depth. PostgreSQL reads its partial index
`event_api_created_id`; SQLite never uses a partial index for a query whose values are
bound parameters, so it read every event of the four kinds from `a2a_taskevent_kind` and
looked each row up for its actor: 16 ms at 100,000 tasks (501,518 events, 18,788 of those
kinds), the audit page 26 → 72 ms from empty (bench/scale.py). With (kind, actor) the count
is a covering index read: 1.5 to 1.7 ms. ANALYZE after: without statistics for the new index
SQLite also chose it for the page's newest-first read and sorted (7 → 40 to 54 ms); with them
it keeps `event_created_id` for the page (docs/production.md, "Scale"). PostgreSQL: nothing.
"""

from django.db import migrations

NAME = "event_kind_actor_sqlite"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {NAME} ON a2a_taskevent (kind, actor)")
    schema_editor.execute("ANALYZE a2a_taskevent")


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [("a2a", "0014_task_fk_indexes_covered")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
