"""A minimal WebSocket reader that times each frame by the kernel's arrival timestamp.

Why: bench/agui_fanout.py reads 100 sockets from one Python process on the same two cores
as the server it measures. When a change fans out, that process reads the 100 frames one
after the other, each behind the CPU, the GIL and its own parsing, so a frame the server
sent at once is timed up to tens of milliseconds late, and the bench counted that wait as
the server's. A real board's clients each have a CPU of their own. With SO_TIMESTAMPNS the
kernel stamps each packet as it reaches the client's socket (CLOCK_REALTIME, the clock of
`time.time()`), so "received" is when the bytes arrived, whatever the reader was doing.

Linux only. No extensions are offered, so the server sends plain unmasked frames; the
reader answers pings (Daphne pings idle sockets) and parses nothing it is not asked to:
`on_text(payload, stamp, now)` gets each text frame's bytes, the kernel's time for the
packet that completed it, and the user-space time it was read at (for comparison).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import struct
import time
from collections.abc import Callable
from urllib.parse import urlsplit

# <asm-generic/socket.h>: SO_TIMESTAMPNS_OLD (SCM_TIMESTAMPNS), a struct timespec of two
# longs; the socket module does not name it.
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@ll")
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)

TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


class StampedSocket:
    """One client WebSocket, read through the event loop's reader callbacks."""

    def __init__(self, on_text: Callable[[bytes, float, float], None]) -> None:
        self.on_text = on_text
        self.sock: socket.socket | None = None
        self.buffer = bytearray()
        self.closed = asyncio.Event()

    async def connect(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        await loop.sock_connect(sock, (parts.hostname, parts.port))
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {parts.path or '/'} HTTP/1.1",
            f"Host: {parts.netloc}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        await loop.sock_sendall(sock, ("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = await loop.sock_recv(sock, 65536)
            if not chunk:
                raise ConnectionError(f"{url}: closed during the handshake")
            answer += chunk
        head, _, rest = answer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(f"{url}: {head.splitlines()[0]!r}")
        self.sock = sock
        self.buffer += rest
        self._frames(time.time(), time.time())
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        assert self.sock is not None
        try:
            data, ancdata, _, _ = self.sock.recvmsg(262144, _ANCILLARY)
        except (BlockingIOError, InterruptedError):
            return
        now = time.time()
        stamp = now
        for level, kind, raw in ancdata:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanos = _TIMESPEC.unpack(raw[: _TIMESPEC.size])
                stamp = seconds + nanos / 1e9
        if not data:
            self.close()
            return
        self.buffer += data
        self._frames(stamp, now)

    def _frames(self, stamp: float, now: float) -> None:
        """Hand over every complete frame in the buffer (the last packet read completed
        them, so its stamp is theirs)."""
        buf = self.buffer
        while len(buf) >= 2:
            opcode, size, at = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if size == 126:
                if len(buf) < 4:
                    return
                size, at = struct.unpack_from("!H", buf, 2)[0], 4
            elif size == 127:
                if len(buf) < 10:
                    return
                size, at = struct.unpack_from("!Q", buf, 2)[0], 10
            if len(buf) < at + size:
                return
            payload = bytes(buf[at : at + size])
            del buf[: at + size]
            if opcode == TEXT:
                self.on_text(payload, stamp, now)
            elif opcode == PING:
                self._send(PONG, payload)
            elif opcode == CLOSE:
                self.close()
                return

    def _send(self, opcode: int, payload: bytes) -> None:
        """A client's frames are masked (RFC 6455 5.3); only small control frames here."""
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        assert self.sock is not None
        self.sock.send(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    def close(self) -> None:
        if self.sock is None:
            return
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        with contextlib.suppress(OSError):  # the server may have gone first
            self._send(CLOSE, struct.pack("!H", 1000))
        self.sock.close()
        self.sock = None
        self.closed.set()
