"""Taskdeck's settings (a2a/conf.py): declared once, read from the environment with every
bad value refused by name, read by code at call time (overrides apply at once), checked by
the system checks, and each variable documented in the README's configuration table."""

from __future__ import annotations

import ast
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from a2a import conf

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\bTASKDECK_[A-Z0-9_]*[A-Z0-9]\b")
CODE = ("a2a", "agui", "dashboard")


# --- the README's table lists what the code reads, and only that ---------------------------


def names_in_code() -> set[str]:
    """Every TASKDECK_* name in the product's code (tests and benches excluded)."""
    files = [ROOT / "manage.py"] + [p for top in CODE for p in (ROOT / top).rglob("*.py")]
    return {name for path in files for name in NAME.findall(path.read_text())}


def names_in_readme_table() -> set[str]:
    """The names in the first column of the README's "Configuration (environment)" table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Configuration (environment)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in NAME.findall(row.split(" | ", 1)[0])}


def test_every_variable_the_code_reads_is_in_the_readme_table():
    missing = names_in_code() - names_in_readme_table()
    assert not missing, f"add to the README's configuration table: {sorted(missing)}"


def test_the_readme_table_lists_nothing_the_code_does_not_read():
    stale = names_in_readme_table() - names_in_code()
    assert not stale, f"the README's table lists variables nothing reads: {sorted(stale)}"


def test_every_variable_the_code_names_is_declared_in_conf():
    declared = {s.env for s in conf.declared() if s.env}
    assert names_in_code() == declared


def test_code_reads_settings_through_conf_only():
    """settings.TASKDECK is read in a2a/setting_kinds.py alone (for a2a.conf): a default or
    a cast elsewhere would drift from the declaration, as a dozen did."""
    allowed = {ROOT / "a2a" / "setting_kinds.py"}
    found = []
    for path in (p for top in CODE for p in (ROOT / top).rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            read = (  # settings.TASKDECK, or getattr(settings, "TASKDECK", …)
                isinstance(node, ast.Attribute)
                and node.attr == "TASKDECK"
                and isinstance(node.value, ast.Name)
                and node.value.id == "settings"
            ) or (isinstance(node, ast.Constant) and node.value == "TASKDECK")
            if read:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"read these through a2a.conf: {found}"


# --- reading the environment -----------------------------------------------------------------


def test_an_empty_environment_gives_the_defaults():
    read = conf.read({})
    assert read.taskdeck["RUNTIME"]["LEASE_SECONDS"] == 15.0
    assert read.taskdeck["RATES"] == {"create": 120, "resync": 60, "socket": 60}
    assert read.taskdeck["AGENTS"] == list(conf.BUILTIN_AGENTS)
    assert "a2a.runtime.agents.tck" not in read.taskdeck["AGENTS"]
    assert read.site.debug is False and read.site.session_idle_minutes == 60
    assert read.site.allowed_hosts == ["127.0.0.1", "localhost", "[::1]"]


def test_values_are_parsed_by_kind():
    read = conf.read(
        {
            "TASKDECK_VAR_DIR": "/srv/td",
            "TASKDECK_LEASE_SECONDS": "30",
            "TASKDECK_PUSH_ALLOW_PRIVATE": "yes",
            "TASKDECK_INLINE_RUNS": "0",
            "TASKDECK_ANONYMOUS_SCOPES": " read, write ,",
            "TASKDECK_EXTRA_AGENTS": "a2a.runtime.agents.tck",
        }
    )
    assert read.taskdeck["RUNTIME"]["LEASE_SECONDS"] == 30.0
    assert read.taskdeck["PUSH"]["ALLOW_PRIVATE"] is True
    assert read.taskdeck["RUNTIME"]["INLINE"] is False
    assert read.taskdeck["ANONYMOUS_SCOPES"] == ["read", "write"]
    assert read.taskdeck["AGENTS"] == [*conf.BUILTIN_AGENTS, "a2a.runtime.agents.tck"]
    # a default that follows another variable
    assert read.taskdeck["RUNTIME"]["WAKE_DIR"] == "/srv/td/wake"


def test_every_bad_value_is_refused_at_once_by_name():
    with pytest.raises(ImproperlyConfigured) as refused:
        conf.read(
            {
                "TASKDECK_LEASE_SECONDS": "-1",
                "TASKDECK_MAX_REQUEST_BYTES": "1e6",
                "TASKDECK_STREAM_POLL_SECONDS": "abc",
                "TASKDECK_DEBUG": "maybe",
                "TASKDECK_DEFAULT_DIALECT": "RFC",
                "TASKDECK_PUBLIC_URL": "td.example",
            }
        )
    text = str(refused.value)
    assert "TASKDECK_LEASE_SECONDS='-1': must be more than 0" in text
    assert "TASKDECK_MAX_REQUEST_BYTES='1e6': not a whole number" in text
    assert "TASKDECK_STREAM_POLL_SECONDS='abc': not a number" in text
    assert "TASKDECK_DEBUG='maybe': not a switch" in text
    assert "TASKDECK_DEFAULT_DIALECT='RFC': must be one of rfc, bindu" in text
    assert "TASKDECK_PUBLIC_URL='td.example': must be an http:// or https:// URL" in text


def test_settings_that_do_not_go_together_are_refused():
    with pytest.raises(
        ImproperlyConfigured, match="TASKDECK_POLL_SECONDS=1 must be at most a third"
    ):
        conf.read({"TASKDECK_LEASE_SECONDS": "2", "TASKDECK_POLL_SECONDS": "1"})
    with pytest.raises(ImproperlyConfigured, match="TASKDECK_BEAT_SECONDS=4 must be less than"):
        conf.read({"TASKDECK_BEAT_SECONDS": "4"})


def test_a_refused_secret_is_not_repeated():
    with pytest.raises(ImproperlyConfigured) as refused:
        conf.read({"TASKDECK_PUSH_SECRET_KEYS": "hunter2-not-a-fernet-key"})
    assert "TASKDECK_PUSH_SECRET_KEYS" in str(refused.value)
    assert "hunter2" not in str(refused.value)


# --- reading in code: live, overridable, defaults for what an override leaves out -----------


def test_code_reads_the_settings_as_they_are_now(settings):
    assert conf.RUNTIME.lease_seconds == settings.TASKDECK["RUNTIME"]["LEASE_SECONDS"]
    settings.TASKDECK = {**settings.TASKDECK, "RUNTIME": {"LEASE_SECONDS": 2.5}}
    assert conf.RUNTIME.lease_seconds == 2.5
    assert conf.RUNTIME.poll_seconds == 0.1  # left out: its declared default
    settings.TASKDECK["RUNTIME"]["LEASE_SECONDS"] = 3.0  # changed in place
    assert conf.RUNTIME.lease_seconds == 3.0
    settings.TASKDECK = {"ACP_HOST": {}}  # no RUNTIME at all
    assert conf.RUNTIME.lease_seconds == 15.0
    assert conf.RATES.per_minute("create") == 120
    with override_settings(TASKDECK={"RUNTIME": {"LEASE_SECONDS": 7.0}}):
        assert conf.RUNTIME.lease_seconds == 7.0
    assert conf.RUNTIME.lease_seconds == 15.0  # the override ended


def test_a_section_cannot_be_written_through(settings):
    with pytest.raises(AttributeError, match="read-only"):
        conf.RUNTIME.lease_seconds = 1.0


# --- system checks -----------------------------------------------------------------------------


def taskdeck_errors() -> list[checks.CheckMessage]:
    return checks.run_checks(tags=["taskdeck"])


def test_the_checks_pass_on_the_suite_settings():
    assert taskdeck_errors() == []


def test_the_checks_name_the_variable_of_a_bad_value(settings):
    runtime = {**settings.TASKDECK["RUNTIME"], "LEASE_SECONDS": -1, "DEAD_SECONDS": "4"}
    settings.TASKDECK = {**settings.TASKDECK, "RUNTIME": runtime}
    found = {(e.id, e.msg) for e in taskdeck_errors()}
    assert found == {
        (
            "taskdeck.E001",
            "TASKDECK_LEASE_SECONDS (settings.TASKDECK['RUNTIME']['LEASE_SECONDS']) is -1: "
            "must be more than 0",
        ),
        (
            "taskdeck.E001",
            "TASKDECK_DEAD_SECONDS (settings.TASKDECK['RUNTIME']['DEAD_SECONDS']) is '4': "
            "must be a number",
        ),
    }


def test_the_checks_refuse_a_poll_longer_than_a_third_of_the_lease(settings):
    runtime = {**settings.TASKDECK["RUNTIME"], "LEASE_SECONDS": 1.0, "POLL_SECONDS": 0.5}
    settings.TASKDECK = {**settings.TASKDECK, "RUNTIME": runtime}
    [error] = taskdeck_errors()
    assert error.id == "taskdeck.E002"
    assert error.msg.startswith("TASKDECK_POLL_SECONDS=0.5 must be at most a third of ")


def test_the_checks_refuse_a_default_skill_nobody_offers(settings):
    settings.TASKDECK = {**settings.TASKDECK, "DEFAULT_SKILL": "nope"}
    [error] = taskdeck_errors()
    assert error.id == "taskdeck.E003" and error.msg.startswith("TASKDECK_DEFAULT_SKILL")


def test_the_checks_refuse_an_unknown_anonymous_scope(settings):
    settings.TASKDECK = {**settings.TASKDECK, "ANONYMOUS_SCOPES": ["read", "admin"]}
    [error] = taskdeck_errors()
    assert error.id == "taskdeck.E004" and "admin" in error.msg


def test_the_checks_refuse_an_agent_module_that_does_not_load(settings):
    agents = [*settings.TASKDECK["AGENTS"], "tests.no_such_agent", "a2a.conf"]
    settings.TASKDECK = {**settings.TASKDECK, "AGENTS": agents}
    found = sorted(e.msg for e in taskdeck_errors() if e.id == "taskdeck.E005")
    assert len(found) == 2
    assert "'a2a.conf' has no SKILL or run" in found[0]
    assert "'tests.no_such_agent' cannot be imported" in found[1]


# --- start-up, as a process sees it ---------------------------------------------------------


def _manage_check(
    tmp_path: Path, command: str = "check", **env: str
) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TASKDECK_", "DJANGO_"))}
    clean.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        TASKDECK_VAR_DIR=str(tmp_path),
        **env,
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), command],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_bad_value_stops_start_up_naming_the_variable(tmp_path):
    done = _manage_check(tmp_path, TASKDECK_LEASE_SECONDS="abc", TASKDECK_POLL_SECONDS="-1")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-3:]
    assert last == [
        "django.core.exceptions.ImproperlyConfigured: Taskdeck's environment has values it "
        "cannot use:",
        "  TASKDECK_LEASE_SECONDS='abc': not a number",
        "  TASKDECK_POLL_SECONDS='-1': must be more than 0",
    ], done.stderr


def test_a_check_error_stops_manage_py_naming_the_variable(tmp_path):
    """What only the loaded apps know: the conformance agent is a skill only where asked."""
    done = _manage_check(tmp_path, TASKDECK_DEFAULT_SKILL="tck")
    assert done.returncode != 0
    assert "(taskdeck.E003) TASKDECK_DEFAULT_SKILL is 'tck': no agent offers" in done.stderr
    asked = _manage_check(
        tmp_path, TASKDECK_DEFAULT_SKILL="tck", TASKDECK_EXTRA_AGENTS="a2a.runtime.agents.tck"
    )
    assert asked.returncode == 0, asked.stderr


def test_a_check_error_stops_a_worker_before_it_serves(tmp_path):
    """A worker runs only the checks of a process that serves no page (a2a.checks
    PROCESS_CHECKS), Taskdeck's among them: the same error stops it at start."""
    done = _manage_check(tmp_path, "run_worker", TASKDECK_DEFAULT_SKILL="tck")
    assert done.returncode != 0
    assert "(taskdeck.E003) TASKDECK_DEFAULT_SKILL is 'tck': no agent offers" in done.stderr
