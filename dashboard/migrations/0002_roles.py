"""The two roles: "operators" (with a2a.operate_task) and "viewers"."""

from django.db import migrations


def create_groups(apps, schema_editor):
    from dashboard.roles import ensure_groups

    ensure_groups(
        apps.get_model("auth", "Group"),
        apps.get_model("auth", "Permission"),
        apps.get_model("contenttypes", "ContentType"),
    )


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["operators", "viewers"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0001_initial"),
        ("a2a", "0003_alter_task_options"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
