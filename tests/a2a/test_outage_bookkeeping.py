"""a2a.db_faults.Outage: what the readers that wait a database outage out share (a
stream, an AG-UI run, an ACP session's follower): how long it has lasted on the reader's
own clock, said once in the log when it starts and once when it ends, however many reads
fail meanwhile. (Each reader through a real outage: tests/a2a/test_db_outage.py,
tests/acp_door/test_outage.py.)"""

from __future__ import annotations

import logging

from django.db import OperationalError

from a2a.db_faults import InfrastructureFault, Outage

log = logging.getLogger("tests.outage")


def test_an_outage_is_timed_and_said_once_when_it_starts_and_once_when_it_ends(caplog):
    caplog.set_level(logging.WARNING, logger="tests.outage")
    now = [100.0]
    down = Outage("stream of task t-1", lambda: now[0], log)
    down.over()  # a read that worked with no outage says nothing
    assert caplog.messages == []

    refused = OperationalError("connection refused\nis the server running?")
    assert down.failed(refused) == 0.0
    now[0] = 103.5
    assert down.failed(InfrastructureFault(refused)) == 3.5
    now[0] = 104.0
    down.over()
    down.over()
    assert caplog.messages == [
        "stream of task t-1: OperationalError: connection refused; retrying",
        "stream of task t-1: the database is back; goes on",
    ]

    now[0] = 200.0  # the next outage is timed from its own start
    assert down.failed(refused) == 0.0
    assert len(caplog.messages) == 3
