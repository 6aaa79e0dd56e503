"""A projection pass's rows ride on its poke (agui.projector.poke), and a Tailer hands
them to its sockets as it hears the poke (agui.fanout.Tailer.hand), without waiting for
the read the poke also asks for. On the embedded default the
relay calls the Tailer with another process's poke as its thread reads it
(a2a.notify.relay.watch), not through the Listener's turns of the event loop. Under
bench/agui_fanout.py --load 16 these cut "in the view -> received" p99 from 43-51 ms to
21-24 ms (docs/production.md)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.db import transaction

from a2a import notify, services
from agui import fanout, projection, projector
from agui.models import AguiEvent
from agui.projector import TEXT, VIEW_GROUP
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pokes(monkeypatch) -> list[dict]:
    """The messages the projector sends its view group, instead of sending them."""
    sent: list[dict] = []

    def send(group: str, message: dict) -> bool:
        if group == VIEW_GROUP:
            sent.append(message)
        return True

    monkeypatch.setattr(notify, "send", send)
    return sent


def test_a_pass_pokes_with_the_rows_it_committed(make_task, pokes):
    task = make_task("working")
    before = AguiEvent.objects.order_by("-id").values_list("id", flat=True).first()
    services.pause_task(task.id, actor=CLIENT, reason="lunch")
    (message,) = pokes[-1:]
    committed = [
        [r.pk, r.task_id, r.version, r.type, r.event]
        for r in AguiEvent.objects.filter(id__gt=before).exclude(type=TEXT).order_by("id")
    ]
    assert committed and message["rows"] == committed


def test_a_pass_too_big_for_a_poke_pokes_without_rows(make_task, pokes, monkeypatch):
    monkeypatch.setattr(projector, "POKE_ROWS_BYTES", 10)
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="lunch")
    assert pokes and pokes[-1] == {"type": "agui.poke"}  # the Tailer's read finds them


def _rows_of(task_id: str) -> list[list]:
    return [
        [r.pk, r.task_id, r.version, r.type, r.event]
        for r in AguiEvent.objects.filter(task_id=task_id).exclude(type=TEXT).order_by("id")
    ]


def test_a_tailer_hands_a_pokes_rows_to_every_socket_and_leaves_the_read_its_own(make_task):
    """Rows handed from a poke reach every socket's queue at once, encoded as a read
    would, once. The cursor and the rows seen stay the read's: it reads them too (and
    leaves them out of what it hands over), since a cursor moved by a poke past rows not
    read yet would hide their deletion by the retention (test_log_retention.py). (The
    Tailer's own loop is not running here: its queues are set by hand, so only `hand` puts
    anything in them.)"""
    task = make_task("working")
    carried = _rows_of(task.id)
    tailer = fanout.Tailer()
    first, second = asyncio.Queue(), asyncio.Queue()
    tailer.queues = {first, second}
    tailer.hand(carried)
    for queue in (first, second):
        handed = queue.get_nowait()
        assert queue.empty()
        assert [list(r[:5]) for r in handed] == carried
        assert [json.loads(r[5]) for r in handed] == [r[4] for r in carried]
    tailer.hand(carried)  # heard twice: handed once
    assert first.empty() and second.empty()
    assert tailer.cursor == 0 and not tailer.seen_set
    rows, _ = fanout._rows_after(carried[0][0] - 1, tailer.seen_set)
    assert [list(r[:5]) for r in rows] == carried  # the read still reads them


def test_a_pass_inside_a_callers_transaction_pokes_without_rows(make_task, pokes):
    """What the caller's transaction does after the pass (the retention may delete the
    rows it wrote: test_log_retention.py) is unknown until it commits: its poke carries
    nothing, and the Tailer's read finds what committed."""
    task = make_task("working")
    pokes.clear()
    with transaction.atomic():
        services.pause_task(task.id, actor=CLIENT, reason="lunch")
        projection.project([task.id], wait=True)  # in this transaction, as the retention's
    assert pokes == [{"type": "agui.poke"}]  # the pass after the commit found nothing due


@pytest.mark.asyncio
async def test_the_relay_calls_a_watcher_with_another_processs_message_on_its_loop():
    heard: asyncio.Queue = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def watcher(message: dict) -> None:
        heard.put_nowait((message, threading.get_ident()))

    notify.relay.watch("agui-test", watcher)
    try:
        payload = json.dumps({"group": "agui-test", "message": {"rows": [[1, "t", 2]]}}).encode()
        # as the relay's thread does with what its inbox read
        await loop.run_in_executor(None, notify.relay.dispatch, [payload], None)
        message, thread = await asyncio.wait_for(heard.get(), 10)
        assert message == {"rows": [[1, "t", 2]]} and thread == threading.get_ident()
        notify.relay.unwatch("agui-test", lambda message: None)  # not the watcher: stays
        assert "agui-test" in notify.relay.watchers
    finally:
        notify.relay.unwatch("agui-test", watcher)
    assert "agui-test" not in notify.relay.watchers
