"""A redis-server of the test's own (tests/redis_server.py), for the Redis fault tests; a
signed-in operator (tests/dashboard/conftest.py); `project_now`, for tests that read the
view inside the test's transaction; `held_projector`, for tests of the projection after
commit that must decide themselves when (and whether) a pass runs; and `fresh_failures`,
a test's own record of the tasks whose pass failed."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agui import projection
from tests.dashboard.conftest import op, operator  # noqa: F401 (fixtures: a signed-in operator)
from tests.redis_server import our_redis  # noqa: F401 (fixture)


@pytest.fixture
def project_now():
    """Project every due change now. The projection runs after commit (agui.projection),
    and a test that is not `transaction=True` never commits: it calls this before it reads
    the view (the due rows are visible to its own connection)."""
    return projection.project_due


@pytest.fixture
def held_projector(settings, monkeypatch) -> Iterator[projection.Projector]:
    """The default `thread` mode, with this process's projector thread held: every commit's
    on-commit subscriber (`projection.wake`) hands its task to a real Projector whose
    thread is alive but never runs a pass, so the committed change stays due — as it does
    when the process dies between its commit and its pass — until the test projects it
    (`project`, `sweep`, `project_due`, `catch_up`). The projector is returned: its
    `pending` shows what the writers handed over."""
    view = {**settings.TASKDECK["VIEW"], "PROJECTION": "thread"}
    settings.TASKDECK = {**settings.TASKDECK, "VIEW": view}
    held = projection.Projector()
    release = threading.Event()
    # alive, so `add` starts no thread of its own; it never takes what it is handed
    held.thread = threading.Thread(target=release.wait, name="held-projector", daemon=True)
    held.thread.start()
    monkeypatch.setattr(projection, "_projector", held)
    # nor does a writer wait for it once it is "behind" (Projector.add): it never projects
    monkeypatch.setattr(projection, "BEHIND_WAIT_SECONDS", 0.0)
    yield held
    release.set()
    held.thread.join(timeout=5)


# A failing task's rest before the sweep tries it again, in these tests: longer than any
# test takes however loaded the machine (the default 5 s ran out under CI's load between
# the failure and the test's "logged once", and the retry logged a second time).
LONG_REST = 600.0


@pytest.fixture
def fresh_failures(monkeypatch) -> None:
    """This test's own record of failing tasks (process-local state), which rest longer
    than any test takes (LONG_REST)."""
    monkeypatch.setattr(projection, "_failing", projection._Failing())
    monkeypatch.setattr(projection, "RETRY_SECONDS", LONG_REST)
