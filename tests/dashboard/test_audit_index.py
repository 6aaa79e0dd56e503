"""Issue 28: the audit's cost does not grow with the event log. Its count and its pages
read API clients' actions from TaskEvent's partial indexes (a2a.models.API_ACTIONS), which
hold nothing else; PostgreSQL uses a partial index only when the query's WHERE implies
the index's, so a change to how either renders shows up here, not as a slow page at 1M."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from a2a import services
from a2a.models import API_ACTION_KINDS
from dashboard.selectors import API_EVENT_ACTIONS, audit_entries
from tests.conftest import query_plan, statements, user_message

pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = [
    {},
    {"sort": "at"},
    {"sort": "who"},
    {"sort": "-who"},
    {"page": "2"},
    {"action": "cancel"},
    {"who": "zed", "q": "api"},
]


@pytest.fixture
def actions():
    key = services.Actor("apikey", "zed-bot")
    for _ in range(3):
        task = services.create_task(user_message("go"), actor=key, skill="batch")
        services.pause_task(task.id, actor=key, reason="api pause")
        services.cancel_task(task.id, actor=key, reason="api cancel")


def test_the_audit_lists_exactly_the_actions_the_index_holds():
    assert set(API_EVENT_ACTIONS) == set(API_ACTION_KINDS)


@pytest.mark.postgres
@pytest.mark.parametrize("query", QUERIES, ids=lambda q: ",".join(f"{k}={v}" for k, v in q.items()))
def test_the_audit_reads_api_actions_from_their_partial_index(actions, query):
    with CaptureQueriesContext(connection) as seen:
        found = audit_entries(query)
    assert found.rows  # the filters match something: the plans below read real rows
    events = [q["sql"] for q in seen.captured_queries if '"a2a_taskevent"' in q["sql"]]
    assert len(events) == 2  # the count and the page
    for sql in events:  # psycopg binds client-side: the values in place, as the server saw them
        assert "event_api_" in query_plan(sql), (sql, query_plan(sql))


def test_on_sqlite_the_audit_counts_api_actions_from_kind_and_actor(actions):
    """SQLite uses no partial index for bound parameters: the count reads (kind, actor)
    only (a2a 0015), not every event of the four kinds and then their rows."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's index (a2a 0015)")
    with statements() as seen:
        found = audit_entries({})
    assert found.total == 6  # three pauses and three cancels by the key
    count = next(s for s in seen if "COUNT(" in s[0] and '"a2a_taskevent"' in s[0])
    steps = query_plan(*count)
    assert "COVERING INDEX event_kind_actor_sqlite" in steps
