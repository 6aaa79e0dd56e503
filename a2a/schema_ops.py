"""Schema steps that Django's own migration operations would do at too high a cost.

Dropping a foreign key's own index: `AlterField(db_index=False)` on SQLite remakes the
whole table (Django's SQLite schema editor copies every row for any field change), which
on a database of months of events is minutes of downtime for what is one `DROP INDEX`.
The migrations that drop such indexes (a2a 0014, agui 0008) change the field in Django's
state only and drop the index here, found by introspection (its name is a hash Django
made), on both databases. Why the indexes go: docs/production.md, "Scale".
"""

from __future__ import annotations

from typing import Any


def drop_single_column_indexes(table: str, column: str) -> Any:
    """A RunPython step: drop every non-unique index of `table` on `column` alone (on
    PostgreSQL that is the plain index and its `_like` twin), keeping the primary key,
    unique constraints and every index on more columns."""

    def forward(apps: Any, schema_editor: Any) -> None:
        conn = schema_editor.connection
        with conn.cursor() as cursor:
            found = conn.introspection.get_constraints(cursor, table)
        for name, info in found.items():
            if (
                info["index"]
                and not info["unique"]
                and not info["primary_key"]
                and info["columns"] == [column]
            ):
                schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")

    return forward


def recreate_foreign_key_index(app_label: str, model_name: str, field_name: str) -> Any:
    """The reverse of `drop_single_column_indexes` for a foreign key: the index (and on
    PostgreSQL its `_like` twin) as Django would have made it."""

    def backward(apps: Any, schema_editor: Any) -> None:
        model = apps.get_model(app_label, model_name)
        field = model._meta.get_field(field_name)
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))
        like = getattr(schema_editor, "_create_like_index_sql", None)
        sql = like(model, field) if like else None
        if sql is not None:
            schema_editor.execute(sql)

    return backward
