"""Sockets cannot hurt the server (issue 31, item 2), over real WebSockets to a Daphne of
each test's own (forked with the settings it needs; /healthz shows its sockets):

- sockets opened at once share one log reader (agui/fanout.py), which stops once the last
  of them went — also when they were aborted while still opening;
- socket opens are limited per tenant (TASKDECK_RATE_SOCKET): one over it is closed with
  4429 and a reason saying when to retry, while another tenant still opens;
- a client that stops reading is closed with 4008 and a reason once the server holds more
  than TASKDECK_VIEW_SOCKET_BUFFER_BYTES for it (dashboard/websocket_limits.py), and reads
  the close after what was sent before it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import types
from collections.abc import Callable, Iterator

import httpx
import pytest
from django.core.cache import cache
from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed, InvalidMessage
from websockets.sync.client import connect

from a2a import api_keys, rate_limits
from agui import backpressure
from agui.consumers import RATE_LIMITED
from dashboard import websocket_limits
from dashboard.websocket_limits import NOT_READING
from tests.conftest import LOCAL_TLS, _application, start_daphne, stop_daphne

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = {"Origin": "http://127.0.0.1"}


# The kernel's send buffer of each socket the small-buffered server accepts. Loopback grows
# it up to 4 MB (net.ipv4.tcp_wmem), which the unread snapshots must fill before the
# server's own bound is met: the test took 11 s with it, 5-6 s with 64 KB (128 KB as Linux
# doubles it). The bound under test is the server's, above whatever the kernel holds.
SMALL_SEND_BUFFER = 64 * 1024


def _small_send_buffers():
    """Runs in the forked server: every accepted socket gets SMALL_SEND_BUFFER."""
    from twisted.internet import tcp

    accepted = tcp.Server.__init__

    def init(self, sock, *args, **kwargs) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_SEND_BUFFER)
        accepted(self, sock, *args, **kwargs)

    tcp.Server.__init__ = init
    return _application()


@pytest.fixture
def server(django_db_blocker) -> Iterator[Callable[..., str]]:
    """`server(**environ)`: a Daphne of the test's own, forked with these TASKDECK_*
    variables; returns its http:// base. Stopped after the test. `small_buffers=True`:
    its sockets' kernel send buffers are small (SMALL_SEND_BUFFER)."""
    procs = []

    def start(small_buffers: bool = False, **environ: str) -> str:
        application = _small_send_buffers if small_buffers else _application
        proc = start_daphne(django_db_blocker, application, environ=environ)
        procs.append(proc)
        return f"http://127.0.0.1:{proc.port.value}"

    yield start
    for proc in procs:
        stop_daphne(proc)


def health(base: str, section: str = "sockets") -> dict:
    return httpx.get(base + "/healthz", verify=LOCAL_TLS, timeout=30).json()[section]


def until(read: Callable[[], dict], wanted: dict, seconds: float = 60) -> dict:
    """Poll `read()` until it equals `wanted` (AssertionError with the last value after
    `seconds`: a bound for a loaded machine, not a timing)."""
    deadline = time.monotonic() + seconds
    while (value := read()) != wanted:
        assert time.monotonic() < deadline, value
        time.sleep(0.05)
    return value


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws/agui/"


def key(name: str, owner: str = "", scopes: tuple[str, ...] = ("read",)) -> dict[str, str]:
    """Headers of a new key (`operator` among its scopes: it sees every tenant's tasks)."""
    _, token = api_keys.create_key(name, list(scopes), owner=owner)
    return {"Authorization": f"Bearer {token}", **ORIGIN}


def test_sockets_opened_at_once_share_one_reader_that_stops_when_they_go(server, make_task):
    for _ in range(3):
        make_task("working")
    base, headers = server(), key("many")
    assert health(base) == {"open": 0, "readers": 0}

    async def open_all(n: int) -> None:
        sockets = await asyncio.gather(
            *(aconnect(ws_url(base), additional_headers=headers, open_timeout=60) for _ in range(n))
        )
        snapshots = await asyncio.wait_for(asyncio.gather(*(ws.recv() for ws in sockets)), 60)
        assert {json.loads(s)["type"] for s in snapshots} == {"STATE_SNAPSHOT"}
        assert await asyncio.to_thread(health, base) == {"open": n, "readers": 1}
        await asyncio.gather(*(ws.close() for ws in sockets))

    asyncio.run(open_all(30))
    until(lambda: health(base), {"open": 0, "readers": 0})

    # a burst aborted while opening (dropped, no close handshake) leaves nothing reading
    async def abort_all(n: int) -> None:
        async def one():
            try:
                async with aconnect(
                    ws_url(base), additional_headers=headers, open_timeout=60
                ) as ws:
                    ws.transport.abort()
            except InvalidMessage:
                # the server dropped it while opening (Daphne gives a handshake 5 s, which a
                # burst on a loaded machine can outlast, CI 2026-11-29): aborted all the same
                pass

        await asyncio.gather(*(one() for _ in range(n)))

    asyncio.run(abort_all(30))
    until(lambda: health(base), {"open": 0, "readers": 0})
    with connect(ws_url(base), additional_headers=headers, open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "STATE_SNAPSHOT"  # serves on
        assert health(base) == {"open": 1, "readers": 1}


@pytest.fixture
def frozen_rate_window(monkeypatch):
    """The limiter's clock stands still in the middle of a window (the forked server
    inherits it), and the counts start from nothing."""
    middle = (time.time() // rate_limits.WINDOW + 0.5) * rate_limits.WINDOW
    monkeypatch.setattr(rate_limits, "time", types.SimpleNamespace(time=lambda: middle))
    cache.clear()
    yield
    cache.clear()


def test_socket_opens_over_the_tenants_rate_are_closed_saying_when_to_retry(
    server, frozen_rate_window
):
    base = server(TASKDECK_RATE_SOCKET="3")
    first, second = key("acme-1", owner="acme"), key("acme-2", owner="acme")
    other = key("globex-1", owner="globex")
    for headers in (first, second, first):  # one tenant: its keys share the count
        with connect(ws_url(base), additional_headers=headers, open_timeout=30) as ws:
            assert json.loads(ws.recv(timeout=30))["type"] == "STATE_SNAPSHOT"

    with (
        connect(ws_url(base), additional_headers=second, open_timeout=30) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        ws.recv(timeout=30)
    assert closed.value.rcvd.code == RATE_LIMITED == 4429
    assert closed.value.rcvd.reason.startswith("rate limited: 3 opens a minute; retry in ")

    with connect(ws_url(base), additional_headers=other, open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "STATE_SNAPSHOT"  # its own count


def test_a_socket_that_stops_reading_is_closed_with_a_reason(server, make_task, monkeypatch):
    # the server waits this long for the client to take its close frame (10 s in
    # production); here a bound for a loaded machine, not a timing
    monkeypatch.setattr(websocket_limits, "CLOSE_GRACE", 60.0)  # the forked server's
    # an opening waits this long for a socket that does not drain before it sends on (and
    # meets the bound): 5 s in production, shorter here as each resync's opening waits
    monkeypatch.setattr(backpressure, "STALL_SECONDS", 0.5)
    for _ in range(60):
        make_task("working")  # a snapshot of some 25 KB
    base = server(small_buffers=True, TASKDECK_VIEW_SOCKET_BUFFER_BYTES="65536")
    headers = key("slow", scopes=("read", "operator"))
    port = int(base.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port))
    # a window that fills soon, yet over loopback's MSS (64 KiB): a smaller one makes
    # every segment wait for a delayed ACK, and reading the backlog takes minutes
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
    # max_queue=1: the client takes one message, then stops reading from the connection
    with connect(
        ws_url(base), sock=sock, additional_headers=headers, max_queue=1, ping_interval=None
    ) as ws:
        first = json.loads(ws.recv(timeout=30))
        assert first["type"] == "STATE_SNAPSHOT"
        deadline = time.monotonic() + 120
        while health(base, "websockets") == {"closedNotReading": 0}:
            assert time.monotonic() < deadline, "the server kept buffering"
            for _ in range(5):  # each asks for a fresh snapshot, which nobody reads
                ws.send(json.dumps({"type": "resync"}))
        assert health(base) == {"open": 1, "readers": 1}  # closing: the close is on its way

        received = 0
        with pytest.raises(ConnectionClosed) as closed:  # the client reads again
            while True:
                ws.recv(timeout=30)
                received += 1
    assert received > 0  # what was sent before the close arrives first
    assert closed.value.rcvd.code == NOT_READING == 4008
    assert closed.value.rcvd.reason == "client not reading: send buffer over 65536 bytes"
    until(lambda: health(base), {"open": 0, "readers": 0})


def test_a_long_opening_to_a_client_that_reads_slowly_is_paced_not_closed(server, make_task):
    """A board with far more tasks needing a person than its snapshot holds (40 operator
    pauses of 24 KB: about 1 MB of `add` deltas after the snapshot, sixteen times the
    64 KB bound here) opens whole for a client that reads, however slowly: the opening
    waits for the socket to drain (agui/backpressure.py) instead of piling its messages
    up in the server, which took such a client for one that stopped reading (4008) — as
    at a million tasks, where 5,000 tasks needing a person overflowed the snapshot. A
    client that stops reading is still closed (the test above)."""
    from tests.agui.test_view_bound import pause_many

    paused = pause_many(40, by_agent=False)
    base = server(TASKDECK_VIEW_SOCKET_BUFFER_BYTES="65536")
    headers = key("slow-reader", scopes=("read", "operator"))
    port = int(base.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # the kernel holds little
    held: set[str] = set()
    with connect(
        ws_url(base), sock=sock, additional_headers=headers, max_queue=1, ping_interval=None
    ) as ws:
        while True:
            event = json.loads(ws.recv(timeout=60))
            if event["type"] == "STATE_SNAPSHOT":
                held |= set(event["snapshot"]["view"]["tasks"])
            elif event["type"] == "STATE_DELTA":
                held |= {op["path"].rsplit("/", 1)[1] for op in event["delta"]}
            elif event["type"] == "CUSTOM" and event["name"] == "taskdeck.counts":
                break
            # a reader slower than the server's loop: what it is given waits in the server
            time.sleep(0.005)
    assert set(paused) <= held
    assert health(base, "websockets") == {"closedNotReading": 0}
