"""PostgreSQL statistics on agui_interrupt (kind, pending), taken together.

Why: the board and the inbox read the pending input requests (`kind = 'INPUT_REQUEST' AND
pending`). Planned column by column, PostgreSQL multiplies the two selectivities; with a
fleet's 50,000 parked tasks (pending PAUSE interrupts) it expected ~36,000 rows for
2,968 at 1,000,000 tasks and read the whole `pending` index and its heap instead of
`interrupt_kind_pending`: 70–1,057 ms against 6 ms with these statistics (EXPLAIN ANALYZE
at 1M, docs/production.md "Scale"). SQLite plans this read well already: nothing to do
there.
"""

from django.db import migrations

NAME = "interrupt_kind_pending_stats"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE STATISTICS IF NOT EXISTS {NAME} (mcv) ON kind, pending FROM agui_interrupt"
    )
    schema_editor.execute("ANALYZE agui_interrupt")  # a sample: seconds at most, at 1M


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP STATISTICS IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [("agui", "0005_projection_cursor")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
