"""A hosted agent's process and its ACP connection: started, asked, watched, stopped.

One `AgentProcess` per held session (a2a.acp_host.session.HostedRun), empty until the
session's first turn needs the agent. It knows nothing of the task: it starts the
agent's command with Taskdeck's client capabilities, puts the host's routes on the
connection (through a2a.acp_sdk), and turns the ways an agent can go away — its process
exiting, its connection closing, no answer in time — into `AgentGone`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import schema as s
from acp import spawn_agent_process

from a2a import acp_sdk, conf
from a2a.acp_host import config

# What Taskdeck offers the agents it hosts, honestly: no file system, no terminal (their
# requests are refused with -32601), and the seed's suspend RFC from the client's side.
CLIENT_CAPABILITIES = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
    "_meta": {"taskdeck/suspend": {"supportsAwaitResumption": True}},
}
EXIT_GRACE_SECONDS = 2.0  # a closed connection, before its process counts as alive

Route = tuple[str, Callable[[Any], Awaitable[Any]], acp_sdk.Kind]


class AgentGone(Exception):
    """The agent's process exited (or was stopped) while we needed it. Its message says
    how (exit code or signal, the last lines of its stderr); `stalled` when it was stopped
    for not answering in time."""

    def __init__(self, why: str, *, stalled: bool = False) -> None:
        super().__init__(why)
        self.stalled = stalled


def describe_exit(code: int | None) -> str:
    """`exited with code 3`, `exited with code -9 (killed by SIGKILL)`."""
    if code is None:
        return "closed its connection"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"exited with code {code} (killed by {signal.Signals(-code).name})"
    return f"exited with code {code}"


class AgentProcess:
    """The process of the agent `agent` holding the session of task `task_id`."""

    def __init__(self, task_id: str, agent: config.HostedAgent) -> None:
        self.task_id = task_id
        self.agent = agent
        self.conn: Any = None
        self.process: Any = None
        self.stack = contextlib.AsyncExitStack()

    # ----- state --------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self.conn is not None

    def has_exited(self) -> bool:
        return self.process is not None and self.process.returncode is not None

    def is_disconnected(self) -> bool:
        """Its connection closed (end of its output, or output that is not JSON-RPC)."""
        return self.conn is not None and acp_sdk.is_disconnected(self.conn)

    # ----- start ----------------------------------------------------------------------------

    async def start(
        self, client: Any, routes: list[Route], heard: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Start the agent, serve `routes` on its connection in place of the SDK's,
        call `heard` on every message from it, and `initialize`: its capabilities."""
        env = {**_base_env(), **self.agent.env}
        stderr = self.stack.enter_context(self.stderr_path().open("ab"))
        self.conn, self.process = await self.stack.enter_async_context(
            spawn_agent_process(
                lambda _conn: client,
                self.agent.command,
                *self.agent.args,
                env=env,
                cwd=self.cwd(),
                transport_kwargs={"stderr": stderr},
                use_unstable_protocol=True,
            )
        )
        for method, func, kind in routes:
            acp_sdk.add_route(self.conn, method, func, kind)
        acp_sdk.observe_incoming(self.conn, heard)
        params = {
            "protocolVersion": 1,
            "clientCapabilities": CLIENT_CAPABILITIES,
            "clientInfo": {"name": "taskdeck", "version": "1"},
        }
        # raw, then checked: the SDK's model drops the seed's capabilities at the root
        raw = await self.request("initialize", params, "initialize")
        s.InitializeResponse.model_validate(raw)
        caps = raw.get("agentCapabilities") if isinstance(raw, dict) else None
        return caps if isinstance(caps, dict) else {}

    def cwd(self) -> str:
        if self.agent.cwd:
            return self.agent.cwd
        path = Path(conf.ACP_HOST.sessions_dir) / self.task_id
        path.mkdir(parents=True, exist_ok=True)
        return str(path.resolve())

    def stderr_path(self) -> Path:
        """The agent's stderr, kept beside (not in) its working directory. The SDK would
        leave it a pipe nobody reads: an agent that logs a lot would block on it."""
        path = Path(conf.ACP_HOST.sessions_dir) / f"{self.task_id}.stderr.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def last_lines(self, lines: int = 5) -> str:
        """The last lines of its stderr, joined with " | " (empty when it said nothing)."""
        tail = self.stderr_tail().splitlines()[-lines:]
        return " | ".join(line.strip() for line in tail if line.strip())

    async def gone(self, proc: Any) -> AgentGone:
        """AgentGone saying how `proc` went: its exit code or signal (waited for a moment:
        EOF reaches us before the exit status), and its last words on stderr."""
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), EXIT_GRACE_SECONDS)
        why = f"its process {describe_exit(proc.returncode if proc is not None else None)}"
        if said := self.last_lines():
            why += f"; the last lines of its stderr: {said}"
        return AgentGone(why[:1500])

    def stderr_tail(self, size: int = 600) -> str:
        try:
            with self.stderr_path().open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - size))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # ----- asking ---------------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any], what: str) -> Any:
        """A request the agent should answer at once, by its method name; its raw result."""
        return await self.call(acp_sdk.send_request(self.conn, method, params), what)

    async def prompt(self, session_id: str, text: str, meta: dict[str, Any] | None = None) -> str:
        """session/prompt with one text block (and `meta` as its `_meta`): the turn's stop
        reason, once it ends."""
        blocks = [s.TextContentBlock(type="text", text=text)]
        request = self.conn.prompt(session_id=session_id, prompt=blocks, **(meta or {}))
        return await self.call(request)

    async def cancel(self, session_id: str) -> None:
        """session/cancel, if the agent is there to hear it."""
        if self.conn is not None and session_id:
            with contextlib.suppress(Exception):
                await self.conn.cancel(session_id=session_id)

    async def call(self, request: Any, what: str = "") -> Any:
        """Await a request to the agent; its process exiting meanwhile is AgentGone. With
        `what` (a request that should be answered at once, not a prompt), an agent that
        does not answer within REQUEST_SECONDS is stopped: AgentGone(what)."""
        proc = self.process
        waiter = asyncio.ensure_future(request)
        exit_watch = asyncio.ensure_future(proc.wait())
        limit = (self.agent.request_seconds or conf.ACP_HOST.request_seconds) if (what) else None
        try:
            done, _ = await asyncio.wait(
                {waiter, exit_watch}, timeout=limit, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                _kill(proc)
                raise AgentGone(f"it did not answer {what} within {limit:g} s", stalled=True)
            if waiter in done:
                try:
                    result = waiter.result()
                except ConnectionError:  # the SDK closed the connection: EOF or bad input
                    raise await self.gone(proc) from None
                return getattr(result, "stop_reason", result)
            raise await self.gone(proc)
        finally:
            exit_watch.cancel()
            if not waiter.done():
                waiter.cancel()

    # ----- stop -----------------------------------------------------------------------------

    def kill(self) -> None:
        if self.process is not None:
            _kill(self.process)

    async def close(self) -> None:
        """Forget the process and its connection; the SDK closes its stdin, then
        terminates it, then kills it."""
        self.conn, self.process = None, None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.stack.aclose(), 10)
        self.stack = contextlib.AsyncExitStack()

    async def wait_exit(self) -> tuple[int | None, bool]:
        """(its exit code, whether it broke the connection). The connection ends first
        (EOF reaches us before the exit status does): a process that is exiting says so
        within moments; one that is not broke the connection (it wrote something that is
        not JSON-RPC) and is stopped."""
        proc = self.process
        broke = False
        if proc is not None and proc.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), EXIT_GRACE_SECONDS)
            except TimeoutError:
                broke = True
                _kill(proc)
                await proc.wait()
        return (proc.returncode if proc is not None else None), broke


def _kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the agent's process unless it has exited (or exits meanwhile). Callers pass
    the process they hold: `close` may have forgotten `self.process` meanwhile."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _base_env() -> dict[str, str]:
    """The SDK's child environment is trimmed already; PATH and HOME are what agents
    launched by npx or a shell script need to start at all."""
    return {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
