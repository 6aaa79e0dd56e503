"""The tests' ACP client: the official Python SDK (`acp`) spawning `manage.py acp`, run on
its own event loop in a thread so that tests stay synchronous (and can use the same
fixtures as every other suite: live HTTP, workers, `unchanged`).

It records every session/update as the raw JSON the agent sent. Updates of a standard kind
also go through the SDK's typed route, so one the SDK's schema refuses is recorded as an
error, exactly as a standard client would log it; a client that did not opt in to the
seed's kinds counts any unknown kind as an error.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp import schema as s

from a2a import acp_sdk

ROOT = Path(__file__).resolve().parents[2]
STANDARD_KINDS = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "session_info_update",
    "config_option_update",
    "usage_update",
}


RECHECK = 0.05  # seconds between Peer.wait_until's checks when no update arrives
WAIT = "wait"  # a permission choice: leave the dialog open until `$/cancel_request`

# The SDK's schema model of each standard method's answer: every answer a test reads is
# checked against it (the seed's session/suspend has no model; its fields are the door's).
RESPONSES: dict[str, type] = {
    "initialize": s.InitializeResponse,
    "authenticate": s.AuthenticateResponse,
    "session/new": s.NewSessionResponse,
    "session/load": s.LoadSessionResponse,
    "session/list": s.ListSessionsResponse,
    "session/resume": s.ResumeSessionResponse,
    "session/close": s.CloseSessionResponse,
    "session/set_mode": s.SetSessionModeResponse,
    "session/prompt": s.PromptResponse,
}


def schema_problem(message: dict[str, Any], method: str | None = None) -> str | None:
    """Why the SDK's schema models refuse a message from the door (None: they take it): a
    session/update by SessionNotification, an error by Error, an answer to `method` by its
    response model. Used by Peer (the SDK client) and by the raw line clients."""
    try:
        if message.get("method") == "session/update":
            s.SessionNotification.model_validate(message.get("params"))
        elif "error" in message:
            s.Error.model_validate(message["error"])
        elif "result" in message and method in RESPONSES:
            RESPONSES[method].model_validate(message["result"])
    except Exception as exc:  # pydantic's ValidationError, said in one line
        return f"{method or message.get('method')}: {exc}".replace("\n", " ")[:2000]
    return None


class Client:
    """The Client side the SDK calls into: answers permissions and forms as told."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    async def request_permission(self, session_id, tool_call, options, **kw):
        self.peer.asked.append(("permission", session_id, tool_call.model_dump(by_alias=True)))
        choice = self.peer.permission(tool_call, options)
        if choice == WAIT:  # a dialog left open until the agent withdraws it
            with self.peer._changed:
                self.peer._changed.notify_all()
            await self.peer.withdrawal.wait()
            self.peer.withdrawal.clear()
            choice = None
        if choice is None:
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
        return s.RequestPermissionResponse(
            outcome=s.AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def create_elicitation(self, message, mode, **kw):
        schema = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)
        self.peer.asked.append(("form", message, schema))
        content = self.peer.form(message, schema)
        if content is None:
            return s.DeclineElicitationResponse(action="decline")
        return s.AcceptElicitationResponse(action="accept", content=content)

    async def session_update(self, session_id, update, **kw):
        pass  # recorded raw by Peer._on_update

    async def read_text_file(self, *a, **kw):
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *a, **kw):
        raise RequestError.method_not_found("fs/write_text_file")


class Peer:
    """`with Peer(env, opted_in=True) as peer:` one `manage.py acp` process and its client."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        opted_in: bool = False,
        forms: bool = False,
        log: Path | None = None,
        command: list[str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.env = env
        self.cwd = cwd or ROOT
        self.opted_in = opted_in
        self.forms = forms
        self.log_path = log
        self.proc: Any = None  # the agent's process, once spawned
        self.command = command or [sys.executable, str(ROOT / "manage.py"), "acp"]
        self.updates: list[tuple[str, dict[str, Any]]] = []  # (sessionId, update)
        self.errors: list[str] = []  # messages a client of this kind would refuse
        self.asked: list[tuple] = []  # permission requests and forms, as asked
        self.parked: list[dict[str, Any]] = []  # session/await_resumption requests
        self.withdrawn: list[dict[str, Any]] = []  # $/cancel_request notifications
        self.withdrawal: asyncio.Event | None = None  # set by $/cancel_request (a WAIT dialog)
        self.permission: Callable[[Any, Any], str | None] = lambda tool_call, options: "approve"
        self.form: Callable[[str, dict], dict | None] = lambda message, schema: None
        self.init: dict[str, Any] = {}
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._ready = None
        self._stop: asyncio.Event | None = None

    # --- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> Peer:
        self._thread.start()
        self._ready = asyncio.run_coroutine_threadsafe(self._open(), self._loop)
        self._ready.result(timeout=60)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._runner.result(timeout=30)
            self._stop = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _open(self) -> None:
        self._stop = asyncio.Event()
        self.withdrawal = asyncio.Event()
        opened: asyncio.Future = self._loop.create_future()
        self._runner = asyncio.run_coroutine_threadsafe(self._run(opened), self._loop)
        await opened

    async def _run(self, opened: asyncio.Future) -> None:
        stderr = open(self.log_path, "ab") if self.log_path else None  # noqa: SIM115
        try:
            async with spawn_agent_process(
                Client(self),
                self.command[0],
                *self.command[1:],
                env=self.env,
                cwd=str(self.cwd),
                use_unstable_protocol=True,
                observers=[self._observe],
                transport_kwargs={"stderr": stderr},
            ) as (conn, proc):
                self.conn, self.proc = conn, proc
                self._hook(conn)
                opened.set_result(None)
                await self._stop.wait()
        except ProcessLookupError:
            # The SDK's shutdown waits 2 s for the agent to exit after closing its stdin,
            # then terminates it; an agent that exited in between (a loaded machine) makes
            # terminate() raise ProcessLookupError (acp/transports.py). It is gone: closed.
            if self.proc is None or self.proc.returncode is None:
                raise
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise
        finally:
            if stderr is not None:
                stderr.close()

    def _hook(self, conn) -> None:
        typed = acp_sdk.route_of(conn, "session/update", "notification")
        assert typed is not None, "the SDK has no typed route for session/update"

        async def on_update(params: Any) -> None:
            update = (params or {}).get("update") or {}
            with self._changed:
                self.updates.append((params.get("sessionId"), update))
                kind = update.get("sessionUpdate")
                if kind not in STANDARD_KINDS and not self.opted_in:
                    self.errors.append(f"unknown update kind {kind!r}")
                self._changed.notify_all()
            if kind in STANDARD_KINDS:
                try:
                    await typed.handle(params)
                except Exception as exc:  # the SDK's schema refused it
                    with self._changed:
                        self.errors.append(f"{kind}: {exc}")

        async def on_park(params: Any) -> dict:
            with self._changed:
                self.parked.append(params)
                self._changed.notify_all()
            if not self.opted_in:
                raise RequestError.method_not_found("session/await_resumption")
            return {}

        async def on_withdrawn(params: Any) -> None:
            pass  # heard by _observe; the SDK's client has no route for it (it logs an error)

        acp_sdk.add_route(conn, "session/update", on_update, "notification")
        acp_sdk.add_route(conn, "$/cancel_request", on_withdrawn, "notification")
        acp_sdk.add_route(conn, "session/await_resumption", on_park, "request")

    def _observe(self, event) -> None:
        """Hears `$/cancel_request` (the agent withdrawing a dialog): recorded, and a dialog
        left open with WAIT is closed. An error answer is checked against the SDK's Error
        model here (the SDK hands the test a RequestError, not the message)."""
        message = event.message
        incoming = event.direction.value == "incoming"
        if incoming and "error" in message and (problem := schema_problem(message)):
            with self._changed:
                self.errors.append(problem)
        if event.direction.value != "incoming" or message.get("method") != "$/cancel_request":
            return
        with self._changed:
            self.withdrawn.append(message.get("params") or {})
            self._changed.notify_all()
        if self.withdrawal is not None:
            self.withdrawal.set()

    # --- calls ------------------------------------------------------------------------------

    def call(self, method: str, params: Any = None, *, timeout: float = 60) -> Any:
        """A raw JSON-RPC request; returns the result (checked against the SDK's schema
        model of its answer) or raises acp.RequestError."""
        return self.start(method, params).result(timeout=timeout)

    def start(self, method: str, params: Any = None):
        """A request left running (a prompt); `.result(timeout)` waits for its answer,
        checked against the SDK's schema model like `call`'s."""
        return asyncio.run_coroutine_threadsafe(self._checked(method, params), self._loop)

    async def _checked(self, method: str, params: Any) -> Any:
        result = await acp_sdk.send_request(self.conn, method, params)
        if (problem := schema_problem({"result": result}, method)) is not None:
            with self._changed:
                self.errors.append(problem)
            raise AssertionError(f"the SDK's schema refuses the answer: {problem}")
        return result

    def notify(self, method: str, params: Any) -> None:
        coro = acp_sdk.send_notification(self.conn, method, params)
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    def error(self, method: str, params: Any = None, *, timeout: float = 60) -> RequestError:
        try:
            result = self.call(method, params, timeout=timeout)
        except RequestError as exc:
            return exc
        raise AssertionError(f"{method} answered {result!r}, expected an error")

    def initialize(self, **meta: Any) -> dict[str, Any]:
        caps: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}
        if self.opted_in:
            caps["_meta"] = {"taskdeck/suspend": {"updates": True, "awaitResumption": True}}
        if self.forms:
            caps["elicitation"] = {"form": {}}
        self.init = self.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": caps,
                "clientInfo": {"name": "taskdeck-tests", "version": "1"},
                **meta,
            },
        )
        return self.init

    def new_session(self, cwd: str = "/work/project", mode: str | None = None) -> str:
        sid = self.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        if mode:
            self.call("session/set_mode", {"sessionId": sid, "modeId": mode})
        return sid

    def prompt(self, sid: str, text: str, *, timeout: float = 60) -> dict[str, Any]:
        return self.call(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
            timeout=timeout,
        )

    # --- what arrived ---------------------------------------------------------------------

    def seen(self, sid: str | None = None) -> list[dict[str, Any]]:
        with self._changed:
            return [u for s_, u in self.updates if sid is None or s_ == sid]

    def wait_update(
        self, sid: str, match: Callable[[dict[str, Any]], bool], *, after: int = 0, timeout=30
    ) -> dict[str, Any]:
        """The first update of session `sid` (from index `after`) that `match`es."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                mine = [u for s_, u in self.updates if s_ == sid][after:]
                found = next((u for u in mine if match(u)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    kinds = [u.get("sessionUpdate") for u in mine]
                    raise AssertionError(f"no matching update within {timeout}s; saw {kinds}")
                self._changed.wait(left)

    def wait_until(self, check: Callable[[], Any], *, what: str, timeout: float = 30) -> Any:
        """Wait until `check()` (called under the peer's lock) is truthy; return it.
        Re-checked on every update and at least every RECHECK seconds: a check that reads
        the database changes with no update to wake it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (found := check()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} within {timeout}s")
                self._changed.wait(min(left, RECHECK))
            return found

    def slash(self, sid: str, text: str, *, timeout: float = 60) -> tuple[dict, str]:
        """A slash command as a user types it: (the prompt's answer, what the agent said
        in reply — the text of the agent messages sent during it)."""
        mark = len(self.seen(sid))
        answer = self.prompt(sid, text, timeout=timeout)
        said = "".join(
            (u.get("content") or {}).get("text", "")
            for u in self.seen(sid)[mark:]
            if u.get("sessionUpdate") == "agent_message_chunk"
        )
        return answer, said

    def wait_parked(self, n: int = 1, *, timeout: float = 30) -> list[dict[str, Any]]:
        """The session/await_resumption requests, once `n` arrived (the agent sends them
        beside the prompt's answer, so they may come just after it)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.parked) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.parked)} await_resumption requests, not {n}")
                self._changed.wait(left)
            return list(self.parked)


def kind(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda u: u.get("sessionUpdate") == name


def says(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda u: (
        u.get("sessionUpdate") == "agent_message_chunk"
        and text in (u.get("content") or {}).get("text", "")
    )


def agent_env(api_key: str | None, **extra: str) -> dict[str, str]:
    """The agent's environment: the test database (as the workers have it), the key."""
    from tests.runtime.conftest import _env

    env = _env()
    env.pop("TASKDECK_API_KEY", None)
    if api_key:
        env["TASKDECK_API_KEY"] = api_key
    env.update(extra)
    return env


def dump(updates: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(u, sort_keys=True) for u in updates)
