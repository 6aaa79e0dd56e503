"""tasks/get and tasks/list cost a constant number of queries, whatever the history
length or page size (docs/design/house-rules.md, D6)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from a2a import services
from a2a.auth import Principal
from a2a.lifecycle import Dialect
from a2a.protocol import methods
from a2a.protocol.calls import run as _run
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)
CALL = Principal(CLIENT, frozenset({"read"}))


def _call(dialect=Dialect.RFC) -> methods.Call:
    return methods.Call(principal=CALL, dialect=dialect)


def _grow(task_id: str, messages: int, artifacts: int) -> None:
    for i in range(messages):
        services.add_message(task_id, user_message(f"more {i}"), actor=CLIENT)
    for i in range(artifacts):
        services.add_artifact(task_id, actor=AGENT, parts=[{"kind": "text", "text": f"a{i}"}])


def _queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


@pytest.mark.parametrize("dialect", [Dialect.RFC, Dialect.BINDU])
@pytest.mark.parametrize("history_length", [None, 0, 3])
def test_get_costs_the_same_for_short_and_long_histories(make_task, dialect, history_length):
    short, long = make_task("working"), make_task("working")
    _grow(long.id, messages=60, artifacts=8)
    for t in (short, long):  # paused, so the Bindu checkpoint is rendered too
        services.pause_task(t.id, actor=CLIENT, dialect=dialect)
    params = {} if history_length is None else {"historyLength": history_length}
    counts = [
        _queries(lambda t=t: methods.get_task({"task": t.id, **params}, _call(dialect)))
        for t in (short, long)
    ]
    # one statement (the task, its history and artifacts: a2a/selectors.py, _GET_TASK);
    # Bindu reads the ORM's way, 2 more for the checkpoint's whole history and artifacts
    assert counts[0] == counts[1], counts
    assert counts[0] == 1 if dialect is Dialect.RFC else counts[0] <= 5, counts
    result = methods.get_task({"task": long.id, **params}, _call(dialect))
    expected = 61 if history_length is None else history_length
    assert len(result.get("history", [])) == expected


@pytest.mark.parametrize("history_length", [0, 5])
def test_list_costs_the_same_for_one_task_and_a_full_page(make_task, history_length):
    params = {
        "pageSize": 50,
        "pageToken": "",
        "historyLength": history_length,
        "includeArtifacts": True,
    }
    first = make_task("working")
    _grow(first.id, messages=10, artifacts=2)
    one = _queries(lambda: methods.list_tasks(params, _call()))
    for _ in range(30):
        t = make_task("working")
        _grow(t.id, messages=8, artifacts=1)
        services.pause_task(t.id, actor=CLIENT)
    many = _queries(lambda: methods.list_tasks(params, _call()))
    assert one == many <= 4, (one, many)
    result = methods.list_tasks(params, _call())
    assert len(result["tasks"]) == 31
    assert all(len(t.get("history", [])) == min(history_length, 9) for t in result["tasks"][:30])


def test_a_blocking_send_does_not_read_the_task_before_it_settles():
    """Its answer is read after the agent settles it; reading it on delivery too cost a
    blocking send a read of the task, its history and artifacts (three queries then, a
    fifth of its web CPU; one statement since) for an answer thrown away."""
    principal = Principal(CLIENT, frozenset({"read", "write"}))

    def send(n: int, blocking: bool):
        message = {"kind": "message", "messageId": f"m-{n}", "role": "user",
                   "parts": [{"kind": "text", "text": f"hi {n}"}]}  # fmt: skip
        call = methods.Call(principal=principal, dialect=Dialect.RFC, settle_first=blocking)
        with CaptureQueriesContext(connection) as ctx:
            result = _run("message/send", {"message": message}, call)
        reads = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
        return result, reads

    answered, reads_answered = send(1, blocking=False)
    stub, reads_stub = send(2, blocking=True)
    assert answered["status"]["state"] == "submitted" and answered["history"]
    assert set(stub) == {"id"}
    # the task with its history and artifacts: read on delivery only when answered now
    artifacts = [
        [q for q in reads if 'FROM "a2a_artifact"' in q] for reads in (reads_answered, reads_stub)
    ]
    assert artifacts[0] and not artifacts[1], artifacts
    assert len(reads_stub) <= len(reads_answered) - 1, (reads_stub, reads_answered)
