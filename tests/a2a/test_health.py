"""GET /healthz over real HTTP against the live Daphne (a2a/health.py): the database
answers or it does not, and how far the live view is behind (the age of the oldest
ProjectionDue row; docs/design/projection-after-commit.md, D8). Unauthenticated, counts
and ages only, never cached.

The lag is made real, never faked: the projection is held off in this process
(`hold_projection`), so a services call commits its change and its due row and nobody
projects it; the Daphne reads the committed rows as any server would. A due row older
than the warning is one whose `at` (the event's time, what the lag measures) is moved
back: exactly what the lag reads of a row a dead process left.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from django.db import connection
from django.db.models import F

from a2a import health, services
from a2a.models import ProjectionDue
from agui import projection
from tests.conftest import CLIENT, _application, local_http, start_daphne, stop_daphne

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def http(asgi_server) -> Iterator[httpx.Client]:
    with local_http(base_url=asgi_server, timeout=30) as client:
        yield client


def healthz(http: httpx.Client) -> dict:
    response = http.get("/healthz")  # no Authorization header, no session: anyone may ask
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Content-Type"] == "application/json"
    return response.json()


def test_caught_up_the_view_has_no_lag(http, make_task):
    make_task("working")  # the suite projects in `sync` mode: projected before it returns
    body = healthz(http)
    # this process's AG-UI sockets and readers (tests/agui/test_socket_limits.py), counts
    assert set(body.pop("sockets")) == {"open", "readers"}
    assert set(body.pop("websockets")) == {"closedNotReading"}
    assert body == {
        "status": "ok",
        "database": "ok",
        "projection": {"lagSeconds": 0, "dueRows": 0, "dueTasks": 0, "mode": "sync"},
    }


def test_changes_left_unprojected_are_counted_and_their_age_is_the_lag(
    http, make_task, hold_projection
):
    a, b = make_task("working"), make_task("working")
    hold_projection()
    services.pause_task(a.id, actor=CLIENT, reason="review")  # a's version 3
    services.resume_task(a.id, actor=CLIENT)  # a's version 4
    services.pause_task(b.id, actor=CLIENT, reason="review")
    body = healthz(http)
    assert body["status"] == "ok"
    assert body["projection"]["dueRows"] == 3
    assert body["projection"]["dueTasks"] == 2
    assert 0 <= body["projection"]["lagSeconds"] < health.LAG_WARN_SECONDS
    assert a.id not in str(body) and b.id not in str(body)  # counts, never task data

    # a's first unprojected change is as old as one a dead process left long ago
    ProjectionDue.objects.filter(task_id=a.id, task_version=3).update(
        at=F("at") - timedelta(seconds=30)
    )
    body = healthz(http)  # still 200: every server shares the backlog
    assert body["status"] == "lagging"
    assert body["projection"]["lagSeconds"] >= 30
    assert body["projection"]["lagSeconds"] == pytest.approx(projection.lag().seconds, abs=5)

    assert projection.project_due() == 2  # what the sweep does
    assert healthz(http)["projection"] == {
        "lagSeconds": 0,
        "dueRows": 0,
        "dueTasks": 0,
        "mode": "sync",
    }


def test_only_get_and_head(http):
    assert http.head("/healthz").status_code == 200
    for method in ("POST", "PUT", "DELETE"):
        response = http.request(method, "/healthz")
        assert response.status_code == 405, method
        assert response.headers["Allow"] == "GET, HEAD"


def test_the_lag_is_one_statement(django_assert_num_queries, make_task, hold_projection):
    hold_projection()
    make_task("working")
    with django_assert_num_queries(1):
        lag = health.projection_lag()
    assert (lag.due_rows, lag.due_tasks) == (2, 1)  # created, started
    with django_assert_num_queries(1):  # the AG-UI side reads the same, no more
        read = projection.lag()
    assert (read.due_rows, read.due_tasks) == (2, 1) and read.seconds >= lag.seconds


def _without_its_database():
    """The ASGI app in a server child whose every connection names a database that is not
    there (as tests/a2a/test_job_reclaim.py points a worker at one): the server runs, its
    database does not answer."""
    name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = (  # shared by every thread's connection
        "/nonexistent/taskdeck.sqlite3" if connection.vendor == "sqlite" else f"{name}_absent"
    )
    return _application()


def test_a_server_whose_database_does_not_answer_is_unavailable(django_db_blocker):
    proc = start_daphne(django_db_blocker, _without_its_database, what="the database-less Daphne")
    try:
        with local_http(base_url=f"http://127.0.0.1:{proc.port.value}", timeout=30) as http:
            response = http.get("/healthz")
    finally:
        stop_daphne(proc)
    assert response.status_code == 503
    assert response.headers["Cache-Control"] == "no-store"
    assert response.json() == {
        "status": "unavailable",
        "database": "unavailable",
        "projection": {"mode": "sync"},
        "sockets": {"open": 0, "readers": 0},  # what this process knows answers on
        "websockets": {"closedNotReading": 0},
    }
