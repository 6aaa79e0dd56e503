"""`make run` seeds demo data with this command; it must work and be idempotent."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from a2a import api_keys
from a2a.models import Task

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
    token = (tmp_path / "demo-api-key").read_text().strip()
    assert token in out.getvalue() and api_keys.verify(token) is not None
    assert oct((tmp_path / "demo-api-key").stat().st_mode)[-3:] == "600"


def test_seed_demo_refuses_to_run_in_production(settings):
    with override_settings(DEBUG=False), pytest.raises(CommandError, match="development"):
        call_command("seed_demo", stdout=StringIO())
    assert not Task.objects.exists()
