"""The task page's timeline decides how every kind of TaskEvent shows: every kind
has its line in dashboard/timeline.py's ENTRIES (tests/test_kinds_handled.py), and every
kind that names a state shows as a state change."""

from dashboard import timeline


def test_every_kind_that_names_a_state_shows_as_a_state_change():
    states = {k for k, shows in timeline.ENTRIES.items() if shows is timeline._state}
    assert states == set(timeline.STATE_EVENTS)
