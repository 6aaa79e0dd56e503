"""`manage.py recount_tasks`: count every owner's tasks in each state again, from the tasks.

The counts ListTasks' totalSize and the board read are kept by the services as they change
tasks (a2a/services/counts.py; docs/design/a2a-surface.md, D27). Rows written around them
— a restored backup, bulk SQL, a fill by bench/scale.py, tasks changed by a server older
than the counts during a rolling deploy — are not counted until this runs. Writers that
change a task's state wait while it runs (about a second at a million tasks).
"""

from django.core.management.base import BaseCommand

from a2a.services import counts


class Command(BaseCommand):
    help = "Count every owner's tasks in each state again (ListTasks' totalSize, the board)."

    def handle(self, *args, **options) -> None:
        rows = counts.recount()
        self.stdout.write(f"recounted: {rows} (owner, state) counts")
