"""Every reader of the TaskEvent log decides what each kind of event means to it: a kind
added to a2a.event_kinds fails here until each reader's table has its line (an explicit
"nothing to show" entry counts). One test for the four readers, each named in its id."""

from __future__ import annotations

import pytest

from a2a.acp_door import updates
from a2a.event_kinds import EventKind
from a2a.protocol import stream
from agui import projector
from dashboard import timeline

READERS = {
    "agui.projector.ACTIVITIES": projector.ACTIVITIES,
    "dashboard.timeline.ENTRIES": timeline.ENTRIES,
    "a2a.acp_door.updates.UPDATES": updates.UPDATES,
    "a2a.protocol.stream.ITEMS": stream.ITEMS,
}


@pytest.mark.parametrize("reader", list(READERS))
def test_every_kind_has_its_line_in_each_reader(reader):
    table = READERS[reader]
    missing = set(EventKind) - set(table)
    assert not missing, f"{reader} has no line for {sorted(missing)}"
    assert set(table) == set(EventKind)
