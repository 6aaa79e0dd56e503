"""The ACP door decides what every kind of TaskEvent becomes for an ACP client: a kind
added to a2a.event_kinds fails here until a2a/acp_door/updates.py's UPDATES has its line
(`_nothing` when a client is not shown it)."""

from a2a.acp_door import updates
from a2a.event_kinds import ENDING_KINDS, EventKind


def test_every_kind_has_its_line_in_the_acp_updates():
    missing = set(EventKind) - set(updates.UPDATES)
    assert not missing, f"a2a.acp_door.updates.UPDATES has no line for {sorted(missing)}"
    assert set(updates.UPDATES) == set(EventKind)


def test_every_ending_kind_ends_the_task_s_tool_call():
    ends = {
        k for k, r in updates.UPDATES.items() if r in (updates._completed, updates._ended_badly)
    }
    assert ends == ENDING_KINDS
