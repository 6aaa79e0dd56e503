"""`manage.py reseal_push_secrets`: seal every webhook secret with the first key of
TASKDECK_PUSH_SECRET_KEYS (after putting a new key first; then the old one can go)."""

from django.core.management.base import BaseCommand
from django.db import transaction

from a2a.push import sealing
from a2a.push.models import PushConfig


class Command(BaseCommand):
    help = "Re-seal webhook tokens and credentials with the current push secret key."

    def handle(self, *args, **options):
        count = 0
        with transaction.atomic():
            for row in PushConfig.objects.select_for_update().only(
                "pk", "token", "auth_credentials"
            ):
                row.token = sealing.reseal(row.token)
                row.auth_credentials = sealing.reseal(row.auth_credentials)
                row.save(update_fields=["token", "auth_credentials"])
                count += 1
        self.stdout.write(f"resealed {count} push configs")
