"""`manage.py create_api_key NAME --scopes read,write` prints a new bearer token once."""

from django.core.management.base import BaseCommand, CommandError

from a2a import api_keys
from a2a.models import ApiKey


class Command(BaseCommand):
    help = "Create (or with --revoke, revoke) a bearer API key for the JSON-RPC endpoint."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--scopes",
            default="read,write",
            help=f"comma-separated, from: {', '.join(api_keys.SCOPES)} (default read,write)",
        )
        parser.add_argument(
            "--owner",
            default="",
            help="the tenant whose tasks the key sees and makes (default: NAME); keys with "
            "the same owner share tasks; the operator scope sees every owner's",
        )
        parser.add_argument("--revoke", action="store_true", help="revoke the key NAME")
        parser.add_argument(
            "--if-missing", action="store_true", help="do nothing if NAME already exists"
        )

    def handle(
        self, *args, name: str, scopes: str, owner: str, revoke: bool, if_missing: bool, **options
    ):
        if revoke:
            if not api_keys.revoke(name):
                raise CommandError(f"no live key named {name!r}")
            self.stdout.write(f"revoked {name}")
            return
        if ApiKey.objects.filter(name=name).exists():
            if if_missing:
                return
            raise CommandError(f"a key named {name!r} exists; revoke it or choose another name")
        try:
            _, token = api_keys.create_key(
                name, [s.strip() for s in scopes.split(",") if s.strip()], owner=owner.strip()
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(token)
