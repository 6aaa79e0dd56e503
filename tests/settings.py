"""Test settings: the real settings, with a throwaway secret key.

The database and channel layer still come from DATABASE_URL / REDIS_URL, so `make test`
runs the same suite on SQLite and on PostgreSQL + Redis.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "insecure-key-for-tests-only")
# Open streams, sockets and ACP sessions re-check their caller this often (5 s by default):
# short, so the revocation tests wait half a second, not five. Child processes inherit it.
os.environ.setdefault("TASKDECK_REVALIDATE_SECONDS", "0.5")
# A request body must arrive within this (30 s by default): short for the slow-client test.
os.environ.setdefault("TASKDECK_BODY_SECONDS", "2")
# The suite makes more tasks a minute with one key than any client should; the rate-limit
# tests set their own limits.
os.environ.setdefault("TASKDECK_RATE_CREATE", "0")
os.environ.setdefault("TASKDECK_RATE_RESYNC", "0")
os.environ.setdefault("TASKDECK_RATE_SOCKET", "0")
# The live view is projected on the committing thread, before a services call returns
# (agui.projection, `sync`), so a test reads the view right after the change it made; the
# Daphne and worker processes the suite starts inherit it. The projection's own tests run
# the default `thread` mode where they need it.
os.environ.setdefault("TASKDECK_PROJECTION", "sync")
# A confirmed bulk action runs in the request (dashboard/bulkops.py), so a test reads its
# outcome right after; the bulk tests run the thread and the scheduler's resume themselves.
os.environ.setdefault("TASKDECK_BULK_RUN", "inline")

from dashboard.settings import *  # noqa: F403

# The conformance kit's scripted agent (a2a/runtime/agents/tck.py), offered by no deployment
# unless asked for (tests/conformance/run_kits.py): the suite's quickest agent, answering
# at once by message-id prefix. Here rather than in TASKDECK_EXTRA_AGENTS, which the runtime
# tests' worker processes set for their own test agents.
TASKDECK["AGENTS"].append("a2a.runtime.agents.tck")  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# One test database per pytest process, so parallel runs (two engineers, or a helper and
# CI on one machine) never drop each other's database.
_suffix = os.environ.get("TASKDECK_TEST_DB_SUFFIX") or str(os.getpid())
_test = DATABASES["default"].setdefault("TEST", {})  # noqa: F405
if "sqlite" in DATABASES["default"]["ENGINE"]:  # noqa: F405
    _test["NAME"] = VAR_DIR / f"test-taskdeck-{_suffix}.sqlite3"  # noqa: F405
else:
    _test["NAME"] = f"test_{DATABASES['default']['NAME']}_{_suffix}"  # noqa: F405
    # Commits without waiting for the WAL's flush to disk: what a test sees is the same
    # (a commit is visible to every other connection at once either way; only a crash of
    # the PostgreSQL server could lose the last ones, and no test crashes it), but each
    # commit no longer waits for an fsync: 13 ms a commit on this 2-core VM under load, 1.3
    # ms without. Since the projection runs after commit (agui.projection, `sync` below)
    # every services call commits twice; the suite commits tens of thousands of times. Child
    # processes (Daphne, workers, the scheduler) load these settings and commit so too.
    _options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _options["options"] = "-c synchronous_commit=off"

# Worker and scheduler processes started by the runtime tests connect to this process's
# test database (their own settings would otherwise point at the development one).
if os.environ.get("TASKDECK_USE_TEST_DB") == "1":
    DATABASES["default"]["NAME"] = _test["NAME"]  # noqa: F405

# Every TaskEvent's data is checked against its kind's shape as it is written
# (a2a.event_kinds.SHAPES, a2a.services._core.record), here and in the worker and
# scheduler processes tests start (they load these settings, with this suffix). A wrong
# shape raises where it is written and is appended to this file, which tests/conftest.py
# reads after every test: one written in a child process fails the test too.
EVENT_SHAPE_FAULTS = VAR_DIR / f"event-shape-faults-{_suffix}.log"  # noqa: F405

# Every line a test's worker and scheduler processes log carries its time (to the
# millisecond), django-tasks-db's own lines included: a failed runtime test reports the
# last of them (tests/conftest.py), to be read against the test's own timeline.
LOGGING["formatters"] = {  # noqa: F405
    "timed": {"format": "%(asctime)s.%(msecs)03d %(name)s %(levelname)s: %(message)s",
              "datefmt": "%H:%M:%S"},
}  # fmt: skip
LOGGING["handlers"]["console"]["formatter"] = "timed"  # noqa: F405
for _name in ("django_tasks", "django_tasks_db"):
    LOGGING["loggers"].setdefault(_name, {"handlers": ["console"]})  # noqa: F405
