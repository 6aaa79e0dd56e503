"""`manage.py seed_demo`: a demo operator and viewer, a demo API key and a handful of tasks
in every interesting state, so `make run` shows something on first start. Idempotent.

Development only: the passwords and the key's token are kept in var/ (mode 600) so they
can be printed on every start; production deployments never run this command.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from a2a import api_keys, services
from a2a.models import ApiKey, Task
from dashboard import roles

OPERATOR = "operator"
VIEWER = "viewer"
DEMO_KEY = "demo"
ANA = services.Actor("operator", "ana", tenant="user:ana")


def _secret_file(name: str, make) -> str:
    path = Path(settings.VAR_DIR) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def demo_key_name(alias: str = "default") -> str:
    """The file in var/ that keeps the demo key of database `alias`: `demo-api-key` for
    SQLite (`make run`), `demo-api-key.<vendor>-<name>` for any other (`make scale-out`:
    `demo-api-key.postgresql-taskdeck`). One file per database, because each database has
    its own keys: a shared file printed one database's key to the other (-32000 unknown or
    revoked)."""
    db = connections[alias]
    if db.vendor == "sqlite":
        return "demo-api-key"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(db.settings_dict.get("NAME") or "")).strip("-")
    return f"demo-api-key.{db.vendor}-{name or 'default'}"


def demo_key() -> str:
    """The demo key's token, one this database accepts: the one kept in its file if the
    database still verifies it, else a new key (any older demo key of this database is
    replaced, since its token is lost). Never a token of another database."""
    path = Path(settings.VAR_DIR) / demo_key_name()
    token = path.read_text().strip() if path.exists() else ""
    if not token or api_keys.verify(token) is None:
        ApiKey.objects.filter(name=DEMO_KEY).delete()
        _, token = api_keys.create_key(DEMO_KEY, ["read", "write", "agent"])
        path.unlink(missing_ok=True)
        _secret_file(path.name, lambda: token)
    return token


def _message(text: str) -> services.IncomingMessage:
    return services.IncomingMessage(
        message_id=f"demo-{secrets.token_hex(4)}", parts=[{"kind": "text", "text": text}]
    )


def _new(skill: str, text: str, **metadata) -> str:
    return services.create_task(
        _message(text), actor=ANA, skill=skill, metadata={"skill": skill, **metadata}
    ).id


def seed_tasks() -> None:
    """One task per demo agent; the workers started by `make run` drive them into their
    states (an approval waiting for an answer, a parked CI wait, a batch in progress, a
    budget pause), plus one an operator paused before it started."""
    _new("approval", "Roll out release 2.14 to production")
    _new("approval", "Rotate the TLS certificates")
    _new("ci-wait", "Run the integration suite for PR 1234", build=1234)
    _new("scheduled", "Post the daily digest", minutes=60)
    _new("batch", "Re-render 200 thumbnails", items=200, pace=2)
    _new("budget", "Research three vendors for log storage", budget=250)
    held = _new("batch", "Re-index the search cluster", items=50)
    services.pause_task(held, actor=ANA, reason="release freeze until 16:00")


def _user(username: str, password: str, group: str):
    """A plain user in `group`: its role comes from the group alone. Not staff, not a
    superuser (demo operators made before were both: they are brought back to a plain
    operator, password kept)."""
    from django.contrib.auth.models import Group

    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
    user.is_staff = user.is_superuser = False
    user.save()
    user.groups.add(Group.objects.get(name=group))
    return user


class Command(BaseCommand):
    help = "Create the demo operator, API key and tasks (development only; idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="run even with DEBUG off")
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="where the server will listen"
        )

    def handle(self, *args, force: bool, url: str, **options):
        url = url.rstrip("/")
        if not settings.DEBUG and not force:
            raise CommandError("seed_demo is for development (DEBUG=1); use --force to insist")
        password = _secret_file("demo-operator-password", lambda: secrets.token_urlsafe(12))
        viewer_password = _secret_file("demo-viewer-password", lambda: secrets.token_urlsafe(12))
        roles.setup_groups()
        operator = _user(OPERATOR, password, roles.OPERATORS)
        _user(VIEWER, viewer_password, roles.VIEWERS)
        assert operator.has_perm(roles.OPERATE)
        token = demo_key()
        key_file = Path(settings.VAR_DIR) / demo_key_name()
        if not Task.objects.exists():
            seed_tasks()
        self.stdout.write(
            f"""
Taskdeck demo
  Dashboard: {url}/
  Operator:  user {OPERATOR}   password {password}
  Viewer:    user {VIEWER}   password {viewer_password}
  API key:   {token}   (in {key_file}; this database's key)
  Try:       curl -s {url}/a2a/ -H 'Authorization: Bearer {token}' \\
               -H 'Content-Type: application/json' \\
               -d '{{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{{}}}}'
"""
        )
