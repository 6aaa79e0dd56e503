"""The live view says when it lags (agui/fanout.py, docs/design/projection-after-commit.md,
D8): over a real WebSocket to the live Daphne, a socket hears CUSTOM `taskdeck.lag` events
while the projection is more than LAG_NOTICE_SECONDS behind, and one with 0 once it caught
up; the change it waited for arrives then.

The lag is made real: the projection is held off in this process (`hold_projection`), so
a pause commits with its due row and nobody projects it; that row's `at` (the event's
time, what the lag measures) is moved 30 s back, as old as one a dead process left — over
the production threshold, so the threshold needs no override and no server of our own.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.db.models import F
from websockets.sync.client import ClientConnection, connect

from a2a import services
from a2a.models import ProjectionDue
from agui import fanout, projection, view
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def socket(asgi_server, api_key) -> Iterator[Callable[[], ClientConnection]]:
    """`socket()` opens one (its snapshot holds what committed before), closed after."""
    url = asgi_server.replace("http://", "ws://") + "/ws/agui/"
    headers = {"Authorization": f"Bearer {api_key}", "Origin": "http://127.0.0.1"}
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(connect(url, additional_headers=headers, open_timeout=10))


def until(ws: ClientConnection, wanted, seen: list[dict]) -> dict:
    """Read events (into `seen`) until one `wanted(event)` accepts; the Tailer reads the
    lag once a second, so a 15 s silence is a failure."""
    while True:
        event = json.loads(ws.recv(timeout=15))
        seen.append(event)
        if wanted(event):
            return event


def lag_event(event: dict) -> bool:
    return event["type"] == "CUSTOM" and event["name"] == fanout.LAG_EVENT


def test_a_lagging_view_is_announced_and_its_end_too(socket, make_task, hold_projection):
    task = make_task("working")
    ws, seen = socket(), []
    assert until(ws, lambda e: True, seen)["type"] == "STATE_SNAPSHOT"
    hold_projection()
    services.pause_task(task.id, actor=CLIENT, reason="review")
    ProjectionDue.objects.filter(task_id=task.id).update(at=F("at") - timedelta(seconds=30))

    notice = until(ws, lag_event, seen)
    assert notice == {"type": "CUSTOM", "name": "taskdeck.lag", "value": notice["value"]}
    assert notice["value"]["seconds"] >= 30
    assert not [e for e in seen if e["type"] == "STATE_DELTA"]  # the view did not move

    projection.project_due()  # caught up (what the sweep does)
    back = until(ws, lambda e: lag_event(e) and e["value"]["seconds"] == 0, seen)
    assert back["value"] == {"seconds": 0}
    if not any(changes(e, task.id) for e in seen):  # the pause's delta, sent with it or after
        until(ws, lambda e: changes(e, task.id), seen)


def changes(event: dict, task_id: str) -> bool:
    path = view.task_path(task_id)
    return event["type"] == "STATE_DELTA" and any(
        o["path"].startswith(path) for o in event["delta"]
    )


def test_a_view_that_keeps_up_says_nothing(socket, make_task):
    """No notice while the lag stays under the threshold: changes and their deltas,
    nothing else (whenever the Tailer read the lag meanwhile, it was under)."""
    task = make_task("working")
    ws, seen = socket(), []
    until(ws, lambda e: e["type"] == "STATE_SNAPSHOT", seen)
    for _ in range(3):
        services.pause_task(task.id, actor=CLIENT, reason="review")
        until(ws, lambda e: e["type"] == "STATE_DELTA", seen)
        services.resume_task(task.id, actor=CLIENT)
        until(ws, lambda e: e["type"] == "STATE_DELTA", seen)
    assert not [e for e in seen if e["type"] == "CUSTOM" and e["name"] == fanout.LAG_EVENT]
