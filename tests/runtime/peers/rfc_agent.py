"""A test peer: an ACP agent, written with the official Python SDK (`agent-client-protocol`),
that implements the ACP suspend RFC from the agent's side. tests/runtime/test_acp_host.py
hosts it under Taskdeck's supervisor (a2a/acp_host) as a real process over stdio.

Run as `python rfc_agent.py` with RFC_AGENT_STATE_DIR set (and RFC_AGENT_NO_RESUME=1 to
offer session/load only, RFC_AGENT_FORGETFUL=1 to forget sessions with its process): a
directory where it keeps each session's history (so a new process can take a session
over with session/load, which replays it, or session/resume, which does not) and
`prompts.log`, one line per prompt received ("<pid> <sessionId> <text>"), written before
acting on it: the tests count these to prove that no prompt is sent twice.

It declares loadSession, stable session/resume, and the seed's supportsSuspend,
supportsAwaitResumption and resumeCauses (in `_meta["taskdeck/suspend"]` and at the root of
agentCapabilities, as the seed writes them). A prompt's first word picks what it does:
echo <text> · tools · ask · askalways <kind> <title> · slow <n> · park <json conditions> ·
read <path> · crash · hang · garbage · notanobject · flood <n>. See each `cmd_*`. A prompt
whose `_meta` carries Taskdeck's `taskdeck/permission` (the answer to a permission request
asked again after its host was killed) is answered "permission: <optionId> (asked again)".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, schema

# run as a script by its host: the repository's root, for the SDK adapter (what it may not
# do through the SDK's public methods, it does as Taskdeck's door and host do)
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from a2a import acp_sdk

STATE = Path(os.environ["RFC_AGENT_STATE_DIR"])
# keeps sessions in memory only: a new process knows none (it still offers resume and load)
FORGETFUL = os.environ.get("RFC_AGENT_FORGETFUL") == "1"
CAUSES = ["explicit_resume", "condition_fired", "timeout", "external_event"]
SUSPEND = {"supportsSuspend": True, "supportsAwaitResumption": True, "resumeCauses": CAUSES}


def now() -> str:
    return datetime.now(UTC).isoformat()


def text(t: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}}


# What the host sends, checked against the SDK's schema models although the routes are
# raw (the seed's fields would be dropped by the typed ones): a message they refuse is
# refused here with -32602 (a notification's is logged to stderr), so the test fails.
REQUESTS: dict[str, Any] = {
    "initialize": schema.InitializeRequest,
    "session/new": schema.NewSessionRequest,
    "session/load": schema.LoadSessionRequest,
    "session/resume": schema.ResumeSessionRequest,
    "session/prompt": schema.PromptRequest,
    "session/cancel": schema.CancelNotification,
}


def checked(method: str, fn: Any) -> Any:
    model = REQUESTS.get(method)
    if model is None:  # the seed's session/suspend: no model in the SDK
        return fn

    async def route(params: Any) -> Any:
        try:
            model.model_validate(params)
        except Exception as exc:
            print(f"SCHEMA: the host sent a {method} the SDK refuses: {exc}", file=sys.stderr)
            raise RequestError.invalid_params({"schema": str(exc)[:1000]}) from None
        return await fn(params)

    return route


class Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.path = STATE / f"{session_id}.json"
        self.history: list[dict[str, Any]] = []
        self.cancelled = asyncio.Event()
        self.suspend_mode = ""  # set by session/suspend while a turn runs
        self.suspended = asyncio.Event()

    def load(self) -> bool:
        if not self.path.exists():
            return False
        self.history = json.loads(self.path.read_text())
        return True

    def save(self) -> None:
        self.path.write_text(json.dumps(self.history))


class RfcAgent:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.handles = 0

    def on_connect(self, conn: Any) -> None:
        """Raw routes on the SDK's router: the seed's methods and fields are not in its
        models (it would drop `input` and `continueTranscript`, and has no session/suspend)."""
        self.conn = conn
        for method, fn, kind in [
            ("initialize", self.initialize, "request"),
            ("session/new", self.new_session, "request"),
            ("session/load", self.load_session, "request"),
            ("session/resume", self.resume_session, "request"),
            ("session/prompt", self.prompt, "request"),
            ("session/suspend", self.suspend, "request"),
            ("session/cancel", self.cancel, "notification"),
        ]:
            acp_sdk.add_route(conn, method, checked(method, fn), kind)

    # ----- helpers -----------------------------------------------------------------------

    async def send(self, session: Session, update: dict[str, Any], *, keep: bool = True) -> None:
        if keep:
            session.history.append(update)
            session.save()
        await acp_sdk.send_notification(
            self.conn, "session/update", {"sessionId": session.id, "update": update}
        )

    def session(self, params: dict[str, Any]) -> Session:
        s = self.sessions.get(params.get("sessionId", ""))
        if s is None:
            raise RequestError(-32002, "unknown session", {"sessionId": params.get("sessionId")})
        return s

    # ----- agent methods ---------------------------------------------------------------

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        caps: dict[str, Any] = {"loadSession": True, "_meta": {"taskdeck/suspend": SUSPEND}}
        if os.environ.get("RFC_AGENT_NO_RESUME") != "1":  # then a host must use session/load
            caps["sessionCapabilities"] = {"resume": {}}
        return {"protocolVersion": PROTOCOL_VERSION, "agentCapabilities": {**caps, **SUSPEND},
                "authMethods": []}  # fmt: skip

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        s = Session(str(uuid.uuid4()))
        s.save()
        self.sessions[s.id] = s
        return {"sessionId": s.id}

    async def load_session(self, params: dict[str, Any]) -> None:
        s = Session(params.get("sessionId", ""))
        if FORGETFUL or not s.load():
            raise RequestError(-32002, "unknown session", {"sessionId": s.id})
        self.sessions[s.id] = s
        for update in s.history:
            await self.send(s, update, keep=False)
        return None

    async def resume_session(self, params: dict[str, Any]) -> dict[str, Any]:
        s = self.sessions.get(params.get("sessionId", ""))
        if s is None:
            s = Session(params.get("sessionId", ""))
            if FORGETFUL or not s.load():
                raise RequestError(-32002, "unknown session", {"sessionId": s.id})
            self.sessions[s.id] = s
        meta = params.get("_meta") or {}
        seed = {k: params.get(k, meta.get(k)) for k in ("handle", "input", "continueTranscript")}
        if any(k in params or k in meta for k in seed):
            s.suspended.clear()
            cont = seed["continueTranscript"] is not False
            said = f"resumed input={json.dumps(seed['input'])} "
            said += f"continueTranscript={str(cont).lower()}"
            asyncio.get_running_loop().call_soon(
                lambda: asyncio.ensure_future(self.send(s, text(said)))
            )  # after the answer, as the seed describes work that goes on
        return {}

    async def suspend(self, params: dict[str, Any]) -> dict[str, Any]:
        s = self.session(params)
        mode = params.get("mode") or "finish_step"
        if mode not in ("finish_step", "interrupt_immediate", "wait_for_completion"):
            raise RequestError.invalid_params({"mode": ["unknown mode"]})
        self.handles += 1
        s.suspend_mode = mode
        s.suspended.set()
        await self.send(s, text(f"suspended {mode}"))
        answer = {"handle": f"rfc-{self.handles}", "suspendedAt": now()}
        if params.get("reason"):
            answer["reason"] = params["reason"]
        return answer

    async def cancel(self, params: dict[str, Any]) -> None:
        s = self.sessions.get((params or {}).get("sessionId", ""))
        if s is not None:
            s.cancelled.set()

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        s = self.session(params)
        said = " ".join(
            b.get("text", "") for b in params.get("prompt") or [] if b.get("type") == "text"
        ).strip()
        with (STATE / "prompts.log").open("a") as log:
            log.write(f"{os.getpid()} {s.id} {said}\n")
            log.flush()
        s.history.append({"sessionUpdate": "user_message_chunk",
                          "content": {"type": "text", "text": said}})  # fmt: skip
        s.save()
        s.cancelled.clear()
        s.suspend_mode = ""
        answer = (params.get("_meta") or {}).get("taskdeck/permission")
        if isinstance(answer, dict):  # a host's answer to a request its process lost
            outcome = answer.get("outcome") or {}
            chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
            await self.send(s, text(f"permission: {chosen or 'cancelled'} (asked again)"))
            return {"stopReason": "end_turn"}
        command, _, rest = said.partition(" ")
        handler = getattr(self, f"cmd_{command}", None)
        if handler is None:
            await self.send(s, text(f"unknown command: {said}"))
            return {"stopReason": "end_turn"}
        return {"stopReason": await handler(s, rest)}

    # ----- commands --------------------------------------------------------------------

    async def cmd_echo(self, s: Session, rest: str) -> str:
        await self.send(s, text(rest))
        return "end_turn"

    async def cmd_tools(self, s: Session, rest: str) -> str:
        call = {"toolCallId": "t1"}
        await self.send(s, {"sessionUpdate": "tool_call", **call, "title": "Read README",
                            "kind": "read", "status": "pending"})  # fmt: skip
        await self.send(s, {"sessionUpdate": "tool_call_update", **call, "status": "in_progress"})
        said = {"type": "content", "content": {"type": "text", "text": "42 lines"}}
        await self.send(s, {"sessionUpdate": "tool_call_update", **call, "status": "completed",
                            "content": [said]})  # fmt: skip
        await self.send(s, {"sessionUpdate": "plan", "entries": [
            {"content": "read", "priority": "high", "status": "completed"},
            {"content": "summarise", "priority": "medium", "status": "in_progress"}]})  # fmt: skip
        resource = {"uri": "file:///tmp/report.txt", "mimeType": "text/plain",
                    "text": "report body"}  # fmt: skip
        await self.send(s, {"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "resource", "resource": resource}})  # fmt: skip
        await self.send(s, text("tools done"))
        return "end_turn"

    async def cmd_ask(self, s: Session, rest: str) -> str:
        """`ask meta`: the request also carries `_meta` keys named like its parameters,
        which a client must not mistake for them."""
        meta = {"_meta": {"options": "not these", "sessionId": "nor this"}} if rest else {}
        answer = await acp_sdk.send_request(self.conn, "session/request_permission", {
            **meta,
            "sessionId": s.id,
            "toolCall": {"toolCallId": "p1", "title": "Delete build/", "kind": "delete",
                         "status": "pending"},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}],
        })  # fmt: skip
        schema.RequestPermissionResponse.model_validate(answer)  # the host's answer, checked
        outcome = (answer or {}).get("outcome") or {}
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else "cancelled"
        await self.send(s, text(f"permission: {chosen}"))
        return "end_turn"

    async def cmd_askalways(self, s: Session, rest: str) -> str:
        """`askalways <kind> <title>`: a permission request that offers "always" options too
        (as coding agents do, which leave remembering them to their client)."""
        kind, _, title = rest.partition(" ")
        answer = await acp_sdk.send_request(self.conn, "session/request_permission", {
            "sessionId": s.id,
            "toolCall": {"toolCallId": f"p{uuid.uuid4().hex[:8]}", "title": title or "Edit",
                         "kind": kind or "edit", "status": "pending"},
            "options": [{"optionId": "once", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                        {"optionId": "never", "name": "Always reject", "kind": "reject_always"}],
        })  # fmt: skip
        outcome = (answer or {}).get("outcome") or {}
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else "cancelled"
        await self.send(s, text(f"permission: {chosen}"))
        return "end_turn"

    async def cmd_slow(self, s: Session, rest: str) -> str:
        for i in range(1, int(rest or 10) + 1):
            if s.suspend_mode in ("interrupt_immediate", "finish_step"):
                return "end_turn"  # at a step boundary: committed to no further work
            await self.send(s, text(f"tick {i}\n"))
            # a tick's work (0.2 s); a cancel or an interrupt_immediate ends it at once
            stop = asyncio.ensure_future(s.cancelled.wait())
            halt = asyncio.ensure_future(s.suspended.wait())
            await asyncio.wait({stop, halt}, timeout=0.2, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            halt.cancel()
            if s.cancelled.is_set():
                return "cancelled"
            if s.suspend_mode == "interrupt_immediate":
                return "end_turn"
            if s.suspend_mode and s.suspended.is_set():
                s.suspended.clear()  # finish_step / wait_for_completion: this tick finishes
        return "end_turn"

    async def cmd_park(self, s: Session, rest: str, reason: str = "waiting as asked") -> str:
        params = {"sessionId": s.id, "reason": reason,
                  "conditions": json.loads(rest or "{}"),
                  "summary": "parked by rfc_agent"}  # fmt: skip
        try:
            answer = await acp_sdk.send_request(self.conn, "session/await_resumption", params)
        except RequestError as exc:
            await self.send(s, text(f"park refused: {exc.code} {exc} {json.dumps(exc.data)}"))
            return "end_turn"
        await self.send(s, text(f"parked {answer.get('handle')}"))
        return "end_turn"

    async def cmd_parkblank(self, s: Session, rest: str) -> str:
        """Park without saying why: a host must refuse it."""
        return await self.cmd_park(s, rest, reason="  ")

    async def cmd_read(self, s: Session, rest: str) -> str:
        """Ask the client for a file (fs/read_text_file), whatever it declared."""
        try:
            answer = await acp_sdk.send_request(
                self.conn, "fs/read_text_file", {"sessionId": s.id, "path": rest or "/etc/hostname"}
            )
        except RequestError as exc:
            await self.send(s, text(f"read refused: {exc.code} {exc}"))
            return "end_turn"
        await self.send(s, text(f"read: {answer}"))
        return "end_turn"

    async def cmd_crash(self, s: Session, rest: str) -> str:
        """Its last words written straight to the pipe (nothing else is queued in a turn
        that just began), so they are there before the process exits: no waiting."""
        said = text("about to crash")
        s.history.append(said)
        s.save()
        note = {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": s.id, "update": said}}  # fmt: skip
        os.write(1, json.dumps(note).encode() + b"\n")
        os._exit(3)

    async def cmd_hang(self, s: Session, rest: str) -> str:
        await s.cancelled.wait()
        return "cancelled"

    async def cmd_garbage(self, s: Session, rest: str) -> str:
        sys.stdout.flush()
        os.write(1, b"this is not json\n")
        await self.send(s, text("after garbage"))
        return "end_turn"

    async def cmd_notanobject(self, s: Session, rest: str) -> str:
        """A JSON line that is not an object: the SDK's reader closes the connection."""
        os.write(1, b"[1, 2, 3]\n")
        await asyncio.Event().wait()  # stays alive: its host must stop it
        return "end_turn"

    async def cmd_flood(self, s: Session, rest: str) -> str:
        for _ in range(int(rest or 100)):
            if s.cancelled.is_set():
                return "cancelled"
            await self.send(s, text("x" * 1000), keep=False)
        return "end_turn"


if __name__ == "__main__":
    asyncio.run(run_agent(RfcAgent()))
