"""stdio for the ACP door: stdout carries protocol lines only, and no line can stop it.

The official SDK's stdio transport (agent-client-protocol 0.12.1) drops a line that is
not JSON without answering, exits on a line that is `null`, dies on one that is a string
or a list, and reads a line of any size. Here every line gets an answer or is served:
- not JSON (or NaN / 1e400) → -32700; not a JSON-RPC object → -32600;
- over MAX_LINE_BYTES → -32600, the line is skipped without being held in memory;
- a request whose params cannot be stored (NUL, lone surrogates, 64-bit overflow, nesting
  past 64 levels) → -32602 naming the place, with the request's id;
and the process keeps serving. stdout is taken over before anything can print on it.
"""

from __future__ import annotations

import asyncio
import logging
import os
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

    def __init__(self, reader: asyncio.StreamReader, sender: Any, *, max_line: int):
        super().__init__(reader, sender)
        self.reader = reader  # our own handle: the base class keeps it privately
        self.max_line = max_line

    async def receive(self) -> dict[str, Any] | None:
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


async def stdio_transport(protocol_fd: int, *, max_line: int) -> GuardedTransport:
    """The transport over this process's stdin and the protocol's private stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=max_line)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    write_protocol = acp_sdk.stdio_write_protocol()
    pipe = os.fdopen(protocol_fd, "wb", buffering=0)
    transport, _ = await loop.connect_write_pipe(lambda: write_protocol, pipe)
    writer = asyncio.StreamWriter(transport, write_protocol, None, loop)
    sender = acp_sdk.message_sender(writer, source="taskdeck.acp.sender")
    return GuardedTransport(reader, sender, max_line=max_line)
