"""What a process imports when Django starts (docs/testing.md, "Start-up"): every worker,
scheduler, ACP door and CLI command pays for it, and the suite starts hundreds of them.
Only the processes that serve a door import the door's tables; the method table still
holds every app's methods whichever module a process imports first.

Each check runs in a fresh interpreter: this process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = (
    "import json, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'dashboard.settings');"
    "import django; django.setup();"
)

pytestmark = pytest.mark.any_database


def _run(code: str, *argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SETUP + code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "startup-test", "HOME": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_django_setup_imports_no_door_and_no_web_server():
    """A worker's or the scheduler's start-up: no Daphne (and its Twisted reactor), no A2A
    method table, no Django REST framework serializers."""
    loaded = _run(
        "print(json.dumps({m: m in sys.modules for m in sys.argv[1:]}))",
        "daphne.server",
        "twisted.internet.reactor",
        "a2a.protocol.methods",
        "rest_framework.serializers",
    )
    assert not any(loaded.values()), loaded


@pytest.mark.parametrize(
    ("app", "command"),
    [("a2a.runtime", "run_worker"), ("a2a.runtime", "run_scheduler"),
     ("a2a.acp_host", "run_acp_host"), ("a2a.grpc_door", "run_grpc")],
)  # fmt: skip
def test_a_process_serving_no_page_checks_no_page(app, command):
    """The checks a worker, the scheduler, the ACP host and the gRPC binding run as they
    start (as BaseCommand.execute runs them) import no URLconf, and so no door: they cost
    1.3 s of CPU at each worker's start. Taskdeck's own checks still run (a check error
    stops a worker: tests/test_conf.py)."""
    ran = _run(
        "from django.core.management import load_command_class;"
        "from django.core.checks import registry;"
        "cmd = load_command_class(sys.argv[1], sys.argv[2]);"
        "cmd.check(tags=cmd.requires_system_checks);"
        "print(json.dumps({'urls': 'dashboard.urls' in sys.modules,"
        " 'ours': 'taskdeck' in cmd.requires_system_checks,"
        " 'unknown': sorted(set(cmd.requires_system_checks)"
        " - registry.registry.tags_available(deployment_checks=True))}))",
        app,
        command,
    )
    assert ran == {"urls": False, "ours": True, "unknown": []}


@pytest.mark.parametrize("first", ["a2a.protocol.methods", "a2a.push.methods", "a2a.jsonrpc.views"])
def test_the_method_table_holds_the_push_methods_whichever_is_imported_first(first):
    table = _run(
        "import importlib; importlib.import_module(sys.argv[1]);"
        "from a2a.protocol.methods import METHODS, SEND_HOOKS;"
        "hooks = [h.__module__ for h in SEND_HOOKS];"
        "print(json.dumps({'methods': sorted(METHODS), 'hooks': hooks}))",
        first,
    )
    assert "tasks/pushNotificationConfig/set" in table["methods"]
    assert "CreateTaskPushNotificationConfig" in table["methods"]
    assert "message/send" in table["methods"] and "SendMessage" in table["methods"]
    assert table["hooks"] == ["a2a.push.services"]  # once, however it was reached


def test_runserver_is_daphnes():
    """`manage.py runserver` keeps serving WebSockets: Daphne's app is installed for it."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.argv = ['manage.py', 'runserver'];"
         "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'dashboard.settings');"
         "from django.conf import settings; print(settings.INSTALLED_APPS[0])"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "startup-test", "HOME": str(ROOT)},
    )  # fmt: skip
    assert done.stdout.strip() == "daphne", done.stderr


def test_an_app_naming_methods_after_the_table_is_built_is_refused():
    """Named after the doors built their table, its methods would be silently missing."""
    from a2a.protocol import extensions, methods

    assert methods.EXTENDED  # built in this process (the doors' tests import it)
    with pytest.raises(RuntimeError, match="built already"):
        extensions.provide("tests.test_startup.no_such_add")
    assert "tests.test_startup.no_such_add" not in extensions._PROVIDERS
