"""Every TaskEvent's data has its kind's shape (a2a.event_kinds.SHAPES).

The suite checks every event it writes, in this process and in the worker and scheduler
processes it starts (tests/settings.py, EVENT_SHAPE_FAULTS; the autouse fixture in
tests/conftest.py fails the test). These tests prove the check is on, strict and loud,
and that the shapes' lists of values are the services' own."""

from __future__ import annotations

from typing import get_args, get_type_hints

import pytest
from django.db import transaction

from a2a import event_kinds
from a2a.event_kinds import SHAPES, EventKind, EventShapeError, check_data
from a2a.models import Suspension, TaskEvent
from a2a.services import _core, notes
from tests.conftest import AGENT, shape_faults


def test_every_kind_has_a_shape_and_every_shape_is_closed():
    assert set(SHAPES) == set(EventKind)
    assert all(shape.__closed__ for shape in SHAPES.values())


def test_the_check_is_on_in_the_test_suite():
    assert _core._SHAPE_FAULTS is not None


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (EventKind.PROGRESS, {"done": "1", "total": 2}),  # no coercion
        (EventKind.ARTIFACT_ADDED, {"artifactId": "a", "append": 0, "partsFrom": 0,
                                    "partsCount": 1}),  # 0 is not False
        (EventKind.CREATED, {}),  # a required key missing
        (EventKind.PICKED_UP, {"worker": 1}),  # a kind with no data
        (EventKind.RETRYING, {"attempt": 1, "retryAt": "x", "error": "e", "extra": 1}),
        (EventKind.HOST_NOTE, {"what": "sneezed", "detail": ""}),  # not a host note
    ],
)  # fmt: skip
def test_a_wrong_shape_is_refused(kind, data):
    with pytest.raises(EventShapeError, match=kind):
        check_data(kind, data)


def test_an_unknown_kind_is_refused():
    with pytest.raises(EventShapeError, match="not an EventKind"):
        check_data("sneezed", {})


@pytest.mark.django_db
def test_a_service_writing_a_wrong_shape_fails_loudly_and_writes_nothing(make_task):
    task = make_task("working")
    before = TaskEvent.objects.count()
    with pytest.raises(EventShapeError), transaction.atomic():
        locked = _core.lock(task.id)
        _core.record(locked, EventKind.PROGRESS, AGENT, _core.now(), data={"done": 1})
    assert TaskEvent.objects.count() == before
    faults = shape_faults()  # what fails the test when nobody expects it (tests/conftest.py)
    assert "progress" in faults and "total" in faults


def _values(shape: type, key: str) -> set[str]:
    return set(get_args(get_type_hints(shape)[key]))


def test_the_shapes_list_the_values_the_services_write():
    assert _values(event_kinds.ToolCallData, "kind") == {"", *notes.TOOL_KINDS}
    assert _values(event_kinds.ToolCallData, "status") == {"", *notes.TOOL_STATUSES}
    assert _values(event_kinds.HostNoteData, "what") == set(notes.HOST_NOTES)
    suspension = event_kinds.SuspensionData
    assert _values(suspension, "initiator") == set(Suspension.Initiator.values)
    assert _values(suspension, "mode") == {"", *Suspension.Mode.values}
    assert _values(event_kinds.ResumedData, "cause") == set(Suspension.Cause.values)
