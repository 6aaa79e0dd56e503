"""dashboard/fair_accept.py: a Daphne process takes one waiting connection per wake-up, so
a burst of connections on the socket the web processes share is spread over them instead
of landing on whichever ran first (docs/production.md, "Garbage and the tail").

In a child process: the patch imports Twisted's reactor, which this process must leave to
Daphne's own (tests start Daphne in children)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Five clients connect before the port reads; one read of the port accepts how many?
SCRIPT = """
import socket, sys
from twisted.internet import protocol, reactor, tcp
if sys.argv[1] == "patched":
    from dashboard import fair_accept
    fair_accept.install()
built = []
class Count(protocol.Factory):
    def buildProtocol(self, addr):
        built.append(addr)
        return protocol.Protocol()
port = reactor.listenTCP(0, Count(), interface="127.0.0.1")
clients = [socket.create_connection(("127.0.0.1", port.getHost().port)) for _ in range(5)]
port.doRead()
first = len(built)
for _ in range(10):
    port.doRead()
print(first, len(built))
"""


@pytest.mark.parametrize("mode, first", [("patched", 1), ("as Twisted ships", 5)])
def test_one_read_of_the_port_accepts_one_waiting_connection(mode, first):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode.split()[0]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the first read takes one (or, unpatched, the whole burst); the next reads the rest
    assert done.stdout.split() == [str(first), "5"]
