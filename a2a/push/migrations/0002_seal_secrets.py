"""Seal webhook tokens and credentials stored before sealing (a2a/push/sealing.py)."""

from django.db import migrations


def seal_existing(apps, schema_editor):
    from a2a.push import sealing

    PushConfig = apps.get_model("push", "PushConfig")
    for row in PushConfig.objects.all().only("pk", "token", "auth_credentials"):
        token, credentials = row.token, row.auth_credentials
        if token and not token.startswith(sealing.PREFIX):
            row.token = sealing.seal(token)
        if credentials and not credentials.startswith(sealing.PREFIX):
            row.auth_credentials = sealing.seal(credentials)
        if (row.token, row.auth_credentials) != (token, credentials):
            row.save(update_fields=["token", "auth_credentials"])


class Migration(migrations.Migration):
    dependencies = [("push", "0001_initial")]
    operations = [migrations.RunPython(seal_existing, migrations.RunPython.noop)]
