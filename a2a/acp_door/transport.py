"""stdio for the ACP door: stdout carries protocol lines only, and no line can stop it.

The official SDK's stdio transport (agent-client-protocol 0.12.1) drops a line that is
not JSON without answering, exits on a line that is `null`, dies on one that is a string
or a list, and reads a line of any size. Here every line gets an answer or is served:
- not JSON (or NaN / 1e400) → -32700; not a JSON-RPC object → -32600;
- over MAX_LINE_BYTES → -32600, the line is skipped without being held in memory;
- a request whose params cannot be stored (NUL, lone surrogates, 64-bit overflow, nesting
  past 64 levels) → -32602 naming the place, with the request's id;
and the process keeps serving. stdout is taken over before anything can print on it.

stdin and stdout may be pipes, sockets, terminals or regular files (asyncio's pipe
transports refuse files: `manage.py acp > log` died with "Pipe transport is only for
pipes…"); from a file, every request is answered before the door ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from typing import Any

from a2a import acp_sdk, jsonsafe

log = logging.getLogger(__name__)


def take_stdout() -> int:
    """Keep a private copy of fd 1 for the protocol and point fd 1 (and sys.stdout) at
    stderr, so a stray print or a library's output can never corrupt the stream."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def _error(rpc_id: Any, code: int, message: str, detail: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "error": {"code": code, "message": message, "data": {"detail": detail}},
    }


class GuardedTransport(acp_sdk.NdjsonTransport):
    """NDJSON over stdio that answers every bad line (see the module docstring). Its
    `send` and `close` are the SDK's; `receive` is its own."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        sender: Any,
        *,
        max_line: int,
        drain_at_eof: bool = False,
    ):
        super().__init__(reader, sender)
        self.reader = reader  # our own handle: the base class keeps it privately
        self.max_line = max_line
        # Input from a regular file (`manage.py acp < requests.ndjson`) ends before its
        # requests are answered; with this set, end of input waits for their answers.
        self.drain_at_eof = drain_at_eof
        self.unanswered: set[Any] = set()
        self.answered = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        await super().send(message)
        if "method" not in message and ("result" in message or "error" in message):
            self.unanswered.discard(message.get("id"))
            if not self.unanswered:
                self.answered.set()

    async def receive(self) -> dict[str, Any] | None:
        message = await self._receive()
        if message is None and self.drain_at_eof and self.unanswered:
            self.answered.clear()
            await self.answered.wait()
        elif message is not None and "method" in message and "id" in message:
            self.unanswered.add(message["id"])
        return message

    async def _receive(self) -> dict[str, Any] | None:
        while True:
            line, whole = await self._bounded_line()
            if line is None:
                return None  # end of input: the client went away
            if not whole:
                await self.send(
                    _error(None, -32600, "Invalid request", f"line over {self.max_line} bytes")
                )
                continue
            line = line.strip()
            if not line:
                continue
            try:
                message = jsonsafe.loads(line)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                await self.send(_error(None, -32700, "Parse error", f"not JSON: {exc}"[:300]))
                continue
            if not isinstance(message, dict) or not (
                isinstance(message.get("method"), str) or "id" in message
            ):
                await self.send(
                    _error(None, -32600, "Invalid request", "a JSON-RPC 2.0 object is expected")
                )
                continue
            rpc_id = message.get("id")
            if (found := jsonsafe.problem(message)) is not None:
                if "method" in message and "id" in message and jsonsafe.problem(rpc_id) is None:
                    detail = f"{found.path}: {found.why}" if found.path else found.why
                    await self.send(_error(rpc_id, -32602, "Invalid params", detail))
                else:
                    log.warning("dropped a message that cannot be stored: %s", found)
                continue
            return message

    async def _bounded_line(self) -> tuple[bytes | None, bool]:
        """(line, True), or (None, True) at end of input, or (b"", False) for a line over
        the limit, which is read to its end and dropped."""
        try:
            return await self.reader.readuntil(b"\n"), True
        except asyncio.IncompleteReadError as exc:
            return (exc.partial or None), True
        except asyncio.LimitOverrunError as exc:
            await self.reader.readexactly(exc.consumed)
        while True:  # skip the rest of the oversized line
            try:
                await self.reader.readuntil(b"\n")
                return b"", False
            except asyncio.IncompleteReadError:
                return None, True
            except asyncio.LimitOverrunError as exc:
                await self.reader.readexactly(exc.consumed)


def _is_regular_file(fd: int) -> bool:
    """asyncio's pipe transports take pipes, sockets and character devices only: a
    regular file (`manage.py acp > log`, `< requests.ndjson`) needs plain reads/writes."""
    return stat.S_ISREG(os.fstat(fd).st_mode)


class FileWriter:
    """What the SDK's sender needs of a writer (`write`, `drain`), over a regular file: a
    write to a file never waits on a reader, so it is done in place."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


async def _feed_from_file(fd: int, reader: asyncio.StreamReader) -> None:
    """Read a regular file into `reader` (in a thread: a file read may block on disk)."""
    while chunk := await asyncio.to_thread(os.read, fd, 65536):
        reader.feed_data(chunk)
    reader.feed_eof()


_feeders: set[asyncio.Task[None]] = set()  # held so that they are not collected mid-read


async def stdio_transport(protocol_fd: int, *, max_line: int) -> GuardedTransport:
    """The transport over this process's stdin and the protocol's private stdout, each a
    pipe, socket, terminal or regular file."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=max_line)
    stdin_fd = sys.stdin.fileno()
    from_file = _is_regular_file(stdin_fd)
    if from_file:
        feeder = asyncio.ensure_future(_feed_from_file(stdin_fd, reader))
        _feeders.add(feeder)
        feeder.add_done_callback(_feeders.discard)
    else:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    writer: Any
    if _is_regular_file(protocol_fd):
        writer = FileWriter(protocol_fd)
    else:
        write_protocol = acp_sdk.stdio_write_protocol()
        pipe = os.fdopen(protocol_fd, "wb", buffering=0)
        transport, _ = await loop.connect_write_pipe(lambda: write_protocol, pipe)
        writer = asyncio.StreamWriter(transport, write_protocol, None, loop)
    sender = acp_sdk.message_sender(writer, source="taskdeck.acp.sender")
    return GuardedTransport(reader, sender, max_line=max_line, drain_at_eof=from_file)
