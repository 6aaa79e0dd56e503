"""dashboard/keepalive_limit.py: a web process closes a client's HTTP connection at its
first answer after TASKDECK_HTTP_KEEPALIVE_SECONDS, saying so in that answer, so that the
processes sharing a port re-share the clients that hold their connections (docs/
production.md, "The fan-out under a real load"). Over a real socket to a served Daphne."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator

import pytest

from tests.conftest import start_daphne, stop_daphne

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 0.5  # seconds, for this test's own Daphne (the default is 5)


@pytest.fixture
def served(django_db_blocker) -> Iterator[tuple[str, int]]:
    proc = start_daphne(django_db_blocker, environ={"TASKDECK_HTTP_KEEPALIVE_SECONDS": str(LIMIT)})
    yield "127.0.0.1", proc.port.value
    stop_daphne(proc)


def answer(sock: socket.socket) -> http.client.HTTPResponse:
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    response = http.client.HTTPResponse(sock)
    response.begin()
    response.read()
    return response


def test_a_connection_open_past_the_limit_is_closed_after_its_next_answer(served):
    with socket.create_connection(served, timeout=30) as sock:
        began = time.monotonic()
        kept = 0
        while (last := answer(sock)).getheader("Connection") != "close":
            kept += 1
            assert time.monotonic() - began < 30, "never closed"
        closed_after = time.monotonic() - began
        assert last.status == 200  # the last answer is whole, and says it is the last
        assert kept >= 2  # the connection served several answers first…
        assert closed_after >= LIMIT  # …for as long as the limit
        assert sock.recv(1) == b""  # then the server closed it
    with socket.create_connection(served, timeout=30) as sock:
        assert answer(sock).getheader("Connection") is None  # the next one is served anew


def test_a_websocket_upgrade_on_an_old_connection_is_not_closed(served, api_key):
    """The limit has no case for upgrades: the socket answers its own handshake."""
    with socket.create_connection(served, timeout=30) as sock:
        assert answer(sock).getheader("Connection") is None  # the connection's first answer
        time.sleep(LIMIT)  # the connection ages past the limit (a clock, not a wait for work)
        sock.sendall(
            b"GET /ws/agui/ HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1\r\n"
            b"Authorization: Bearer " + api_key.encode() + b"\r\n\r\n"
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 101"), head[:200]
        frames = head.partition(b"\r\n\r\n")[2] or sock.recv(4096)
        assert frames[:1] == b"\x81"  # and the socket is served: its first text frame
