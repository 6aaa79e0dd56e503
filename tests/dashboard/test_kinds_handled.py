"""The task page's timeline decides how every kind of TaskEvent shows: a kind added to
a2a.event_kinds fails here until dashboard/timeline.py's ENTRIES has its line."""

from a2a.event_kinds import EventKind
from dashboard import timeline


def test_every_kind_has_its_line_on_the_timeline():
    missing = set(EventKind) - set(timeline.ENTRIES)
    assert not missing, f"dashboard.timeline.ENTRIES has no line for {sorted(missing)}"
    assert set(timeline.ENTRIES) == set(EventKind)


def test_every_kind_that_names_a_state_shows_as_a_state_change():
    states = {k for k, shows in timeline.ENTRIES.items() if shows is timeline._state}
    assert states == set(timeline.STATE_EVENTS)
