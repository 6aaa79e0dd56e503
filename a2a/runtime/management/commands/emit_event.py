"""`manage.py emit_event NAME [--payload JSON]`: wake tasks parked on NAME."""

import json

from django.core.management.base import BaseCommand, CommandError

from a2a import services


class Command(BaseCommand):
    help = "Post an event; parked tasks whose conditions it meets resume."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--payload", default="{}", help="a JSON object")

    def handle(self, *args, name: str, payload: str, **options):
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise CommandError(f"--payload is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise CommandError("--payload must be a JSON object")
        if not name.strip() or any(c.isspace() for c in name):
            raise CommandError("the event name must be non-empty and without spaces")
        event = services.emit_event(name, data, actor=services.Actor("cli", "emit_event"))
        woke = ", ".join(w["taskId"] for w in event.woke) or "nothing"
        self.stdout.write(f"event {name} woke {woke}")
