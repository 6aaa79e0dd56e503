"""The log reader's reads (agui/fanout.py): what one read hands over, and the reader's
connection kept between reads (no health-check ping before each, yet a connection the
server dropped is replaced without losing the read).
"""

from __future__ import annotations

import pytest
from django.db import connection

from agui import fanout
from agui.models import AguiEvent, LogRetention
from tests.conftest import end_backend

pytestmark = pytest.mark.django_db(transaction=True)


def log_ids() -> list[int]:
    return list(
        AguiEvent.objects.exclude(type="TEXT_MESSAGE").order_by("id").values_list("id", flat=True)
    )


def test_one_read_hands_over_the_unseen_rows_and_the_horizon(make_task):
    make_task("working")
    make_task("input-required")
    ids = log_ids()
    assert len(ids) >= 3
    LogRetention.objects.update_or_create(pk=1, defaults={"horizon": 7})

    seen = {ids[1]}
    rows, horizon = fanout._rows_after(ids[0] - 1, seen)
    assert [r[0] for r in rows] == [i for i in ids if i != ids[1]]
    assert horizon == 7
    for row_id, task_id, version, kind, event, text in rows:
        db = AguiEvent.objects.get(pk=row_id)
        assert (task_id, version, kind, event) == (db.task_id, db.version, db.type, db.event)
        assert fanout.json.loads(text) == event  # the text a socket sends, encoded once


def test_a_read_with_nothing_new_still_says_the_horizon(make_task):
    make_task("working")
    ids = log_ids()
    LogRetention.objects.update_or_create(pk=1, defaults={"horizon": 3})
    assert fanout._rows_after(ids[-1], set()) == ([], 3)
    assert fanout._rows_after(0, set(ids))[0] == []
    LogRetention.objects.all().delete()
    assert fanout._rows_after(0, set())[1] == 0  # no retention yet


@pytest.mark.postgres
def test_a_read_on_a_connection_the_server_dropped_is_made_on_a_new_one(make_task):
    """The reader skips the health check's ping on a connection it used a moment ago; when
    the server ended that connection meanwhile (a restart, a terminated backend) the read
    is made again on a new one: the sockets get their rows, nothing is raised."""
    make_task("working")
    read = fanout.kept_connection(lambda: AguiEvent.objects.count())
    before = read()
    pid = connection.connection.info.backend_pid
    end_backend(pid)
    assert read() == before
    assert connection.connection.info.backend_pid != pid
