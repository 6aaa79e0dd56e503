"""`make run` seeds demo data with this command; it must work and be idempotent."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from a2a import api_keys
from a2a.models import ApiKey, Task
from dashboard.management.commands.seed_demo import demo_key_name

pytestmark = pytest.mark.django_db


def test_seed_demo_is_idempotent_and_prints_working_credentials(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    with override_settings(DEBUG=True):
        call_command("seed_demo", stdout=(out := StringIO()))
        states = sorted(Task.objects.values_list("state", flat=True))
        call_command("seed_demo", "--url", "http://127.0.0.1:8155/", stdout=(again := StringIO()))
    assert "Dashboard: http://127.0.0.1:8000/" in out.getvalue()  # make run's default
    assert "Dashboard: http://127.0.0.1:8155/\n" in again.getvalue()
    assert "curl -s http://127.0.0.1:8155/a2a/" in again.getvalue()
    assert sorted(Task.objects.values_list("state", flat=True)) == states
    assert set(states) == {"submitted", "paused-by-client"}  # the workers take it from here
    skills = set(Task.objects.values_list("skill", flat=True))
    assert skills == {"approval", "ci-wait", "scheduled", "batch", "budget"}
    key_file = tmp_path / demo_key_name()
    token = key_file.read_text().strip()
    assert token in out.getvalue() and api_keys.verify(token) is not None
    assert oct(key_file.stat().st_mode)[-3:] == "600"


def test_seed_demo_refuses_to_run_in_production(settings):
    with override_settings(DEBUG=False), pytest.raises(CommandError, match="development"):
        call_command("seed_demo", stdout=StringIO())
    assert not Task.objects.exists()


def test_each_database_prints_a_key_it_accepts_never_the_other_ones(tmp_path, settings):
    """`make run` (SQLite) and `make scale-out` (PostgreSQL) keep their demo keys in files
    of their own; a file holding a token this database does not know (another database's,
    or a revoked key's) is replaced by a key this database accepts, and the printed key is
    always the one it accepts. Runs on both lanes: SQLite and PostgreSQL."""
    settings.VAR_DIR = tmp_path
    mine = tmp_path / demo_key_name()
    other_name = (
        "demo-api-key.postgresql-taskdeck" if mine.name == "demo-api-key" else "demo-api-key"
    )
    other = tmp_path / other_name
    other.write_text("td_0badc0de_a-key-of-the-other-database\n")
    mine.write_text("td_0badc0de_a-key-of-the-other-database\n")  # as the shared file held
    with override_settings(DEBUG=True):
        call_command("seed_demo", stdout=(out := StringIO()))
        token = mine.read_text().strip()
        assert api_keys.verify(token) is not None
        assert f"API key:   {token}" in out.getvalue() and mine.name in out.getvalue()
        assert "a-key-of-the-other-database" not in out.getvalue()
        assert other.read_text().strip() == "td_0badc0de_a-key-of-the-other-database"
        assert ApiKey.objects.filter(name="demo").count() == 1
        # the next start keeps the key (it still verifies): the printed key stays the same
        call_command("seed_demo", stdout=(again := StringIO()))
        assert f"API key:   {token}" in again.getvalue()
        # a revoked demo key is replaced, never printed
        api_keys.revoke("demo")
        call_command("seed_demo", stdout=(third := StringIO()))
    fresh = mine.read_text().strip()
    assert fresh != token and f"API key:   {fresh}" in third.getvalue()
    assert api_keys.verify(fresh) is not None


def test_the_key_file_is_named_after_its_database(settings):
    """SQLite keeps README's `var/demo-api-key`; another database names vendor and name."""
    from django.db import connection

    name = demo_key_name()
    if connection.vendor == "sqlite":
        assert name == "demo-api-key"
    else:
        assert name.startswith(f"demo-api-key.{connection.vendor}-") and "/" not in name
