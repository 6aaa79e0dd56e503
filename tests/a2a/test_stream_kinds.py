"""The A2A stream decides what every kind of TaskEvent is on a stream: every kind has
its line in a2a/protocol/stream.py's ITEMS (tests/test_kinds_handled.py; `_not_streamed`
when a stream does not carry it). Push delivery owes a webhook exactly
the events a stream carries (a2a.push.delivery.deliverable)."""

from datetime import UTC, datetime

import pytest

from a2a.event_kinds import STATUS_KINDS, EventKind
from a2a.lifecycle import Dialect
from a2a.models import Artifact, Task, TaskEvent
from a2a.protocol import stream
from a2a.push.delivery import deliverable


def _item(kind: EventKind, role: str) -> dict | None:
    """What the stream makes of an event of `kind` (rows built in memory: no database)."""
    task = Task(id="t-1", context_id="c-1", state="working")
    artifact = Artifact(artifact_id="a-1", parts=[{"kind": "text", "text": "x"}])
    read = stream._Read(task, {}, {"a-1": artifact}, Dialect.RFC)
    event = TaskEvent(
        kind=kind,
        data={"role": role, "artifactId": "a-1"},
        from_state="working",
        to_state="working",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return stream.ITEMS[kind](event, read)


@pytest.mark.parametrize("role", ["user", "agent"])
@pytest.mark.parametrize("kind", sorted(EventKind))
def test_push_delivers_what_a_stream_carries(kind, role):
    assert deliverable(kind, role) == (_item(kind, role) is not None)


@pytest.mark.parametrize("kind", sorted(STATUS_KINDS))
def test_every_status_event_is_a_status_update(kind):
    assert _item(kind, "agent")["kind"] == "status-update"
