"""An editor's session through a database outage (a restart, a failover): its follower
waits it out and goes on from its cursors; a turn still open past the streams' outage
bound fails with -32603 instead of hanging. (The follower used to end on the first failed
read, and the editor heard nothing more of its session until it attached again.)

The outage is real and of this test database only: tests/a2a/test_db_outage.py's
`Outage` (connections refused, every backend terminated; the `outage` fixture,
shared through tests/acp_door/conftest.py). The stdio door
(`manage.py acp`), whose log the test reads to know the follower met the outage."""

from __future__ import annotations

import pytest
from acp import RequestError

from a2a import services
from a2a.acp_door.live import UNAVAILABLE
from tests.acp_door.peer import kind
from tests.acp_door.test_door import CWD, start_prompt
from tests.runtime.conftest import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.timeout(120),
]
OPERATOR = services.Actor("operator", "ana")


def log_says(path, text: str) -> bool:
    return path.exists() and text in path.read_text(errors="replace")


def test_a_session_follows_its_task_again_after_an_outage(open_peer, acp_key, outage, tmp_path):
    with open_peer(acp_key, opted_in=True) as peer:
        sid = peer.new_session(CWD)
        running, task = start_prompt(peer, sid)
        handle = peer.call("session/suspend", {"sessionId": sid, "reason": "review"})["handle"]
        running.result(timeout=30)
        peer.wait_update(sid, kind("suspended"))
        door_log = tmp_path / "acp-0.log"
        outage.begin()
        wait_for(lambda: log_says(door_log, "retrying"), what="the follower meeting the outage")
        outage.end()
        services.resume_task(task.id, actor=OPERATOR, handle=handle)
        resumed = peer.wait_update(sid, kind("resumed"))
        assert resumed["handle"] == handle
        wait_for(lambda: log_says(door_log, "the database is back"), what="the follower's word")
        assert not log_says(door_log, "Traceback")


def test_a_turn_open_past_the_outage_bound_fails_and_the_next_one_works(
    open_peer, acp_key, outage, tmp_path
):
    with open_peer(acp_key, TASKDECK_STREAM_OUTAGE_SECONDS="0.5") as peer:
        sid = peer.new_session(CWD)
        running, _ = start_prompt(peer, sid)
        outage.begin()
        with pytest.raises(RequestError) as failed:
            running.result(timeout=60)
        assert failed.value.code == -32603 and failed.value.data == {"detail": UNAVAILABLE}
        outage.end()
        # the session is still attached: its task can be suspended and is followed
        peer.call("session/suspend", {"sessionId": sid, "reason": "after the outage"})
        peer.wait_update(sid, lambda u: "after the outage" in str(u))
        wait_for(
            lambda: log_says(tmp_path / "acp-0.log", "the database is back"),
            what="the follower's word",
        )
