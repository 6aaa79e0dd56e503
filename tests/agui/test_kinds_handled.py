"""The projection decides what every kind of TaskEvent does to a task's AG-UI activities:
a kind added to a2a.event_kinds fails here until agui/projector.py's ACTIVITIES has its
line (`_untouched` when it opens, moves on and closes nothing)."""

from a2a.event_kinds import ENDING_KINDS, EventKind
from agui import projector


def test_every_kind_has_its_line_in_the_projection():
    missing = set(EventKind) - set(projector.ACTIVITIES)
    assert not missing, f"agui.projector.ACTIVITIES has no line for {sorted(missing)}"
    assert set(projector.ACTIVITIES) == set(EventKind)


def test_every_ending_kind_ends_the_task_s_activities():
    ends = {k for k, touch in projector.ACTIVITIES.items() if touch is projector._task_ends}
    assert ends == ENDING_KINDS
