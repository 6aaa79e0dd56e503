# ACP sessions hold their context from the moment they open (issue 32): a session with no
# task yet gets its Context row too, owned by the session's tenant. One INSERT ... SELECT.

from django.db import migrations

_SQL = """
INSERT INTO a2a_context (context_id, tenant, created_at)
SELECT s.context_id, s.owner, s.created_at
FROM acp_door_acpsession s
WHERE NOT EXISTS (SELECT 1 FROM a2a_context c WHERE c.context_id = s.context_id)
"""


def backfill(apps, schema_editor):
    schema_editor.execute(_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("acp_door", "0002_session_owner"),
        ("a2a", "0012_contexts"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
