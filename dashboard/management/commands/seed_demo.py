"""`manage.py seed_demo`: a demo operator, a demo API key and a handful of tasks in every
interesting state, so `make run` shows something on first start. Idempotent.

Development only: the operator's password and the key's token are kept in var/ (mode 600)
so they can be printed on every start; production deployments never run this command.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from a2a import api_keys, services
from a2a.conditions import parse_conditions
from a2a.models import ApiKey, Task

OPERATOR = "operator"
DEMO_KEY = "demo"
AGENT = services.Actor("agent", "demo-agent")
ANA = services.Actor("operator", "ana")


def _secret_file(name: str, make) -> str:
    path = Path(settings.VAR_DIR) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def _message(text: str) -> services.IncomingMessage:
    return services.IncomingMessage(
        message_id=f"demo-{secrets.token_hex(4)}", parts=[{"kind": "text", "text": text}]
    )


def _new(text: str) -> str:
    return services.create_task(_message(text), actor=ANA, skill="approval").id


def seed_tasks() -> None:
    _new("Summarise yesterday's incidents")

    working = _new("Migrate the billing tables")
    services.start_task(working, actor=AGENT, text="Copying table 3 of 8")
    services.add_artifact(
        working,
        actor=AGENT,
        name="migration-plan.md",
        parts=[{"kind": "text", "text": "1. snapshot\n2. copy\n3. verify"}],
    )

    waiting = _new("Roll out release 2.14 to production")
    services.start_task(waiting, actor=AGENT)
    services.request_input(
        waiting,
        actor=AGENT,
        explanation="The rollout plan is ready. Approve it to start the canary.",
        request={
            "title": "Approve the 2.14 rollout",
            "fields": [
                {"name": "decision", "type": "approval", "required": True},
                {"name": "canary_percent", "type": "integer", "default": 5},
            ],
        },
    )

    held = _new("Rotate the TLS certificates")
    services.start_task(held, actor=AGENT)
    services.pause_task(held, actor=ANA, reason="release freeze until 16:00")

    parked = _new("Run the integration suite for PR 1234")
    services.start_task(parked, actor=AGENT, text="Build 1234 started")
    services.park_task(
        parked,
        actor=AGENT,
        reason="waiting for ci.build.completed:1234",
        summary="Build 1234 queued; ETA 3 minutes.",
        conditions=parse_conditions(
            {"onEvent": "ci.build.completed:1234", "timeout": {"durationMinutes": 30}}
        ),
    )

    done = _new("Draft the weekly status email")
    services.start_task(done, actor=AGENT)
    services.complete_task(done, actor=AGENT, text="Draft sent to #status")

    dropped = _new("Re-index the search cluster")
    services.cancel_task(dropped, actor=ANA, reason="superseded by the cluster upgrade")


class Command(BaseCommand):
    help = "Create the demo operator, API key and tasks (development only; idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="run even with DEBUG off")

    def handle(self, *args, force: bool, **options):
        if not settings.DEBUG and not force:
            raise CommandError("seed_demo is for development (DEBUG=1); use --force to insist")
        password = _secret_file("demo-operator-password", lambda: secrets.token_urlsafe(12))
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=OPERATOR, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(password)
            user.save()
        if not ApiKey.objects.filter(name=DEMO_KEY, revoked_at__isnull=True).exists():
            ApiKey.objects.filter(name=DEMO_KEY).delete()
            _, token = api_keys.create_key(DEMO_KEY, ["read", "write", "agent"])
            (Path(settings.VAR_DIR) / "demo-api-key").unlink(missing_ok=True)
            _secret_file("demo-api-key", lambda: token)
        token = _secret_file("demo-api-key", lambda: "")
        if not Task.objects.exists():
            seed_tasks()
        self.stdout.write(
            f"""
Taskdeck demo
  Sign in:   http://127.0.0.1:8000/admin/   user {OPERATOR}   password {password}
  API key:   {token}
  Try:       curl -s http://127.0.0.1:8000/a2a/ -H 'Authorization: Bearer {token}' \\
               -H 'Content-Type: application/json' \\
               -d '{{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{{}}}}'
"""
        )
