"""The ACP door decides what every kind of TaskEvent becomes for an ACP client: every
kind has its line in a2a/acp_door/updates.py's UPDATES (tests/test_kinds_handled.py;
`_nothing` when a client is not shown it), and every ending kind ends the tool call."""

from a2a.acp_door import updates
from a2a.event_kinds import ENDING_KINDS


def test_every_ending_kind_ends_the_task_s_tool_call():
    ends = {
        k for k, r in updates.UPDATES.items() if r in (updates._completed, updates._ended_badly)
    }
    assert ends == ENDING_KINDS
