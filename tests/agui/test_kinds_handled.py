"""The projection decides what every kind of TaskEvent does to a task's AG-UI activities:
every kind has its line in agui/projector.py's ACTIVITIES (tests/test_kinds_handled.py;
`_untouched` when it opens, moves on and closes nothing), and every ending kind ends them."""

from a2a.event_kinds import ENDING_KINDS
from agui import projector


def test_every_ending_kind_ends_the_task_s_activities():
    ends = {k for k, touch in projector.ACTIVITIES.items() if touch is projector._task_ends}
    assert ends == ENDING_KINDS
