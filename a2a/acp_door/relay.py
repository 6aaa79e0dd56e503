#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = ["websockets>=13"]
# ///
"""taskdeck-acp: the editor's end of Taskdeck's remote ACP door.

An editor (Zed, JetBrains, Neovim, acpx) launches this as its ACP agent: it relays the
editor's JSON-RPC lines on stdin to the Taskdeck server's WebSocket (`/acp/`, one message
per text frame) and the server's messages back to stdout, one a line. Everything an ACP
agent does — sessions, prompts, commands, suspend and resume — the server's door does;
this file only carries messages. It needs Python 3.10+ and `websockets`, nothing of
Taskdeck: no checkout, no database or Redis settings.

    uv run https://taskdeck.example/acp/relay.py --server https://taskdeck.example
    python3 taskdeck-acp.py --server http://127.0.0.1:8000 --key td_…   (pip install websockets)

The API key: `--key`, else TASKDECK_API_KEY; it is sent in the handshake
(`Authorization: Bearer …`). stdout carries protocol lines only. When the server cannot be
reached, refuses the key or goes away, the relay says so on stderr in one line, answers
every request the editor is still waiting for with a JSON-RPC error saying the same, and
exits non-zero (2 for a refused key, 1 otherwise). It does not reconnect: the editor
starts it again, and `session/load` (or `session/resume`) attaches to the session, whose
task ran on meanwhile on the server.

Served by every Taskdeck server at GET /acp/relay.py (docs/acp.md, "Remote editors").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

KEY_ENV = "TASKDECK_API_KEY"
# The server's WebSocket refuses a message over 1 MiB by closing the socket (Daphne's
# default), so a longer line is answered here (-32600) and never sent.
MAX_LINE = 1024 * 1024
KEY_REFUSED = 4401
PROG = "taskdeck-acp"

EOF_MARK = object()  # stdin ended: the editor went away
TOO_LONG = object()  # a line over MAX_LINE, read to its end and dropped


def socket_url(server: str) -> str:
    """`http://host:8000` → `ws://host:8000/acp/` (https → wss); a path prefix (a server
    behind /taskdeck/) is kept; a ws(s):// URL is taken as the socket's own."""
    parts = urlsplit(server.strip())
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme.lower())
    if scheme is None or not parts.netloc:
        raise ValueError(f"--server must be an http(s):// or ws(s):// URL, not {server!r}")
    path = parts.path
    if parts.scheme.lower().startswith("http") or not path.rstrip("/"):
        path = path.rstrip("/") + "/acp/"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def error(rpc_id: Any, code: int, message: str, detail: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "error": {"code": code, "message": message, "data": {"detail": detail}},
    }


class Relay:
    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.key = key
        self.lines: asyncio.Queue[Any] = asyncio.Queue()
        self.waiting: dict[str, Any] = {}  # the editor's requests with no answer yet, by id
        self.out = sys.stdout.buffer
        self.spoke: asyncio.Event | None = None  # set at the editor's first line (or EOF)
        self.heard = False  # a line came before EOF
        self.editor_left = False  # stdin ended and we closed the socket

    # --- the editor's side ---------------------------------------------------------------

    def read_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a thread (stdin may be a pipe, a file or a console, on any system): each line
        put on the queue, a line over MAX_LINE as TOO_LONG (never held), then EOF_MARK."""
        stdin = sys.stdin.buffer
        try:
            while True:
                line = stdin.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    while (rest := stdin.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass
                    line = TOO_LONG
                loop.call_soon_threadsafe(self._put, line)
            loop.call_soon_threadsafe(self._put, EOF_MARK)
        except RuntimeError:
            pass  # the relay is ending (its loop closed): nobody reads what comes now

    def _put(self, line: Any) -> None:
        self.heard = self.heard or line is not EOF_MARK
        self.lines.put_nowait(line)
        if self.spoke is not None:
            self.spoke.set()

    def write(self, message: dict[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        try:
            self.out.write(text.encode("utf-8") + b"\n")
            self.out.flush()
        except OSError:  # the editor closed our stdout: it is gone, nobody to tell
            os._exit(0)  # the server sees the socket drop; the tasks stay as they are

    def note(self, text: str) -> None:
        print(f"{PROG}: {text}", file=sys.stderr, flush=True)

    def remember(self, text: str) -> None:
        """Note a request the editor now waits on (answered with an error if the server
        goes away before it answers)."""
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return  # the server answers it (-32700)
        if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
            self.waiting[json.dumps(message["id"])] = message["id"]

    def answered(self, text: str) -> None:
        if '"id"' not in text:
            return  # a notification
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return
        if isinstance(message, dict) and "method" not in message and "id" in message:
            self.waiting.pop(json.dumps(message["id"]), None)

    def fail_waiting(self, code: int, detail: str, why: str = "") -> None:
        """Answer every request the editor waits on, and those it already sent that were
        never relayed, with the error; then the relay exits."""
        while not self.lines.empty():
            line = self.lines.get_nowait()
            if isinstance(line, bytes):
                self.remember(line.decode("utf-8", "replace"))
        # the reason in the message too: some clients show only it (acpx does)
        message = "Authentication required" if code == -32000 else "Server unavailable"
        message = f"{message}: {why or detail}"
        for rpc_id in self.waiting.values():
            self.write(error(rpc_id, code, message, detail))
        self.waiting.clear()

    # --- the server's side -----------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self.spoke = asyncio.Event()
        threading.Thread(target=self.read_stdin, args=(loop,), daemon=True).start()
        from websockets.asyncio.client import connect  # meanwhile the first line comes
        from websockets.exceptions import ConnectionClosed

        # Connect once the editor speaks (it sends `initialize` at once): a server that
        # cannot be reached or refuses the key then always has a request to answer.
        await self.spoke.wait()
        if not self.heard:
            return 0  # stdin ended before a word
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        try:
            ws = await connect(
                self.url,
                additional_headers=headers,
                max_size=None,  # the server's messages are bounded there (1 MiB)
                open_timeout=15,
                user_agent_header=f"{PROG} (websockets)",
            )
        except Exception as exc:  # refused, unknown host, not a WebSocket, timed out …
            detail = f"cannot reach the Taskdeck server at {self.url}: {_said(exc)}"
            self.note(detail)
            self.fail_waiting(-32603, detail)
            return 1
        upstream = asyncio.ensure_future(self.upstream(ws, ConnectionClosed))
        downstream = asyncio.ensure_future(self.downstream(ws, ConnectionClosed))
        await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
        if upstream.done() and upstream.exception() is not None:  # a bug here, not the server
            self.note(f"relay failed: {_said(upstream.exception())}")
            await ws.close(1011, "the relay failed")
            downstream.cancel()
            self.fail_waiting(-32603, "the relay failed")
            return 1
        await downstream  # the editor left (we closed the socket) or the server did
        upstream.cancel()
        if self.editor_left:
            return 0
        return self.closed(ws)

    async def downstream(self, ws: Any, closed: type[Exception]) -> None:
        """The server's messages to the editor, one a line, until the socket closes."""
        try:
            async for frame in ws:
                text = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
                if "\n" in text or "\r" in text:  # one message a line, whatever the framing
                    text = json.dumps(json.loads(text))
                self.answered(text)
                self.write(text)
        except closed:
            pass

    async def upstream(self, ws: Any, closed: type[Exception]) -> None:
        """The editor's lines to the server until stdin ends (then close the socket) or
        the server closes it (downstream says why)."""
        while True:
            line = await self.lines.get()
            if line is EOF_MARK:  # the editor is gone: as the stdio door, we stop
                self.editor_left = True
                await ws.close(1000, "the editor closed the connection")
                return
            if line is TOO_LONG:
                self.write(error(None, -32600, "Invalid request", f"line over {MAX_LINE} bytes"))
                continue
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                self.write(error(None, -32700, "Parse error", f"not UTF-8: {exc}"[:300]))
                continue
            self.remember(text)
            try:
                await ws.send(text)
            except closed:
                return

    def closed(self, ws: Any) -> int:
        """The server closed the socket (or the connection broke): say why, answer what
        the editor waits on, and the exit status."""
        rcvd = ws.protocol.close_rcvd  # the server's close frame, None if it never came
        code = rcvd.code if rcvd is not None else 1006
        reason = (rcvd.reason if rcvd is not None else "") or "no reason given"
        if code == KEY_REFUSED:
            detail = f"the Taskdeck server at {self.url} said: {reason}"
            self.note(f"{detail} (give a valid key with --key or {KEY_ENV})")
            self.fail_waiting(-32000, detail, reason)
            return 2
        if rcvd is None:
            detail = f"the connection to the Taskdeck server at {self.url} broke"
        else:
            detail = f"the Taskdeck server at {self.url} closed the connection: {reason} ({code})"
        self.note(f"{detail}; start the agent again to reattach (session/load)")
        self.fail_waiting(-32603, detail)
        return 1


def _said(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Relay an editor's ACP (stdio) to a Taskdeck server's remote ACP door.",
    )
    parser.add_argument("--server", required=True, help="the server's URL, e.g. https://host")
    parser.add_argument("--key", default=None, help=f"the API key (default: ${KEY_ENV})")
    args = parser.parse_args(argv)
    try:
        url = socket_url(args.server)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    key = (args.key if args.key is not None else os.environ.get(KEY_ENV, "")).strip()
    host = urlsplit(url).hostname or ""
    if key and url.startswith("ws://") and host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"{PROG}: warning: the API key travels unencrypted to {host}: use https://",
            file=sys.stderr,
        )
    try:
        return asyncio.run(Relay(url, key).run())
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the stdin thread may be blocked in a read holding stdin's lock, and
    # Python's shutdown then aborts ("could not acquire lock … at interpreter shutdown").
    os._exit(status)
