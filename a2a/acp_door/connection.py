"""One ACP client connection: the methods an editor calls, answered through the sessions
module (and so through `a2a.services`), and the live sessions it follows.

Every request is validated with the official SDK's schema models (`acp.schema`); the
door registers its own routes on the SDK's router so that (a) the seed's non-standard
`session/suspend` and the seed's fields of `session/resume` reach it, (b) `_meta` can never
override a typed parameter (the SDK's default routes splat `_meta` keys into the handler's
arguments: `_meta: {"cwd": "/etc"}` would replace `cwd`), and (c) domain errors map to ACP
codes in one place (`errors.from_domain`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp import schema as s
from channels.db import database_sync_to_async
from pydantic import BaseModel

from a2a import acp_sdk, api_keys, conf, rate_limits, skills
from a2a.acp_door import commands, sessions
from a2a.acp_door.errors import (
    NOT_NOW,
    SessionNotFound,
    auth_required,
    from_domain,
    invalid_params,
)
from a2a.acp_door.live import LiveSession
from a2a.acp_door.updates import SUSPEND_META, TASK_META
from a2a.auth import (
    Principal,
    Unauthenticated,
    authenticate,
    key_principal,
    revalidate_seconds,
    still_valid,
)
from a2a.errors import NotAllowedNow
from a2a.formats import ts
from a2a.lifecycle import TransitionRefused
from a2a.models import Suspension

log = logging.getLogger(__name__)

AUTH_METHOD = "taskdeck-api-key"
KEY_ENV = "TASKDECK_API_KEY"  # conf.Process.api_key
METADATA_META = "taskdeck/metadata"  # prompt _meta: metadata for the task a prompt starts
RESUME_CAUSES = [c.value for c in Suspension.Cause]
SEED_RESUME_FIELDS = ("handle", "input", "continueTranscript")
SUSPEND_CAPS = {
    "supportsSuspend": True,
    "supportsAwaitResumption": True,
    "resumeCauses": RESUME_CAUSES,
}
db = database_sync_to_async


def _absolute_cwd(request: BaseModel | None) -> None:
    """ACP: a `cwd` (session/new, load, resume, list's filter) must be an absolute path; a
    relative one means nothing to a session that may run anywhere, so it is refused (-32602)
    before anything is written. POSIX and Windows forms are both absolute paths."""
    cwd = getattr(request, "cwd", None)
    if cwd is None or PurePosixPath(cwd).is_absolute() or PureWindowsPath(cwd).is_absolute():
        return
    raise invalid_params({"cwd": [f"must be an absolute path, not {cwd[:200]!r}"]})


def _no_mcp_servers(request: BaseModel | None) -> None:
    """`mcpServers` (session/new, load, resume) must be empty: the door's tasks run on
    Taskdeck's workers, which connect to no MCP server of the editor's. A list that is not
    empty is refused (-32602) before anything is written, rather than taken and ignored."""
    servers = getattr(request, "mcp_servers", None)
    if not servers:
        return
    names = ", ".join(repr(getattr(server, "name", "?"))[:80] for server in servers[:5])
    raise invalid_params(
        {
            "mcpServers": [
                f"Taskdeck connects to no MCP servers (its agents run on the server, not in "
                f"the editor): send an empty list, not {names}"
            ]
        }
    )


@dataclass
class Client:
    """What the client said about itself in `initialize`."""

    name: str = ""
    opted_in: bool = False  # clientCapabilities._meta["taskdeck/suspend"]: seed update kinds
    forms: bool = False  # clientCapabilities.elicitation.form: elicitation/create
    initialized: bool = False


@dataclass
class Door:
    """The ACP agent Taskdeck serves on one stdio connection."""

    principal: Principal | None = None
    key_problem: str = ""
    client: Client = field(default_factory=Client)
    live: dict[str, LiveSession] = field(default_factory=dict)
    conn: Any = None
    # The key this connection was opened with, for an `authenticate` that names none:
    # None = this process's TASKDECK_API_KEY (stdio); the remote door gives the
    # handshake's key ("" for none), never the server's own environment.
    opened_with: str | None = None

    # --- wiring --------------------------------------------------------------------------

    def on_connect(self, conn: Any) -> None:
        """Called by the SDK's AgentSideConnection once its router exists: replace its
        routes with the door's (see the module docstring)."""
        self.conn = conn
        typed: list[tuple[str, type[BaseModel], Callable[..., Awaitable[Any]], str]] = [
            ("initialize", s.InitializeRequest, self.initialize, "request"),
            ("authenticate", s.AuthenticateRequest, self.authenticate, "request"),
            ("session/new", s.NewSessionRequest, self.new_session, "request"),
            ("session/load", s.LoadSessionRequest, self.load_session, "request"),
            ("session/list", s.ListSessionsRequest, self.list_sessions, "request"),
            ("session/resume", s.ResumeSessionRequest, self.resume_session, "request"),
            ("session/close", s.CloseSessionRequest, self.close_session, "request"),
            ("session/set_mode", s.SetSessionModeRequest, self.set_mode, "request"),
            ("session/prompt", s.PromptRequest, self.prompt, "request"),
            ("session/cancel", s.CancelNotification, self.cancel, "notification"),
        ]
        for method, model, handler, kind in typed:
            acp_sdk.add_route(conn, method, self._typed(model, handler), kind)
        acp_sdk.add_route(conn, "session/suspend", self._typed(None, self.suspend), "request")

    def _typed(self, model: type[BaseModel] | None, handler: Callable[..., Awaitable[Any]]):
        async def route(params: Any) -> Any:
            raw = params if isinstance(params, dict) else {}
            if model is None and not isinstance(params, dict):
                raise invalid_params({"": ["params must be an object"]})
            request = model.model_validate(params) if model is not None else None
            _absolute_cwd(request)
            _no_mcp_servers(request)
            try:
                return await handler(request, raw)
            except RequestError:
                raise
            except Exception as exc:
                mapped = from_domain(exc) or (
                    auth_required(str(exc)) if isinstance(exc, Unauthenticated) else None
                )
                if mapped is None:
                    raise
                raise mapped from None

        return route

    async def guard(self) -> None:
        """Revoking the key ends what it opened: checked every REVALIDATE_SECONDS, a
        revoked key's running prompts fail with -32000, its sessions stop following, and
        every later request is refused until `authenticate` with a live key."""
        while True:
            await asyncio.sleep(revalidate_seconds())  # a period, not a synchronisation
            principal = self.principal
            if principal is None or await db(still_valid)(principal.actor):
                continue
            if self.principal is principal:
                self.principal, self.key_problem = None, "the API key was revoked"
            for live in list(self.live.values()):
                if live.turn is not None:
                    live.turn.fail(auth_required("the API key was revoked"))
                await live.stop()
            self.live.clear()

    async def close(self) -> None:
        """The client went away: stop following; tasks stay as they are (a suspended task
        stays suspended, a running one runs on, visible on the dashboard)."""
        for live in list(self.live.values()):
            await live.stop()
        self.live.clear()

    # --- identity ----------------------------------------------------------------------

    def _need(self, scope: str) -> Principal:
        if self.principal is None:
            raise auth_required(
                self.key_problem
                or f"set {KEY_ENV} in the agent's environment, or call authenticate "
                f'with _meta {{"taskdeck/apiKey": "<key>"}}'
            )
        if scope not in self.principal.scopes:
            raise auth_required(f"needs an API key with the {scope!r} scope")
        return self.principal

    @classmethod
    async def from_environment(cls) -> Door:
        """The door with the identity TASKDECK_API_KEY (or anonymous scopes) gives."""
        door = cls()
        token = conf.PROCESS.api_key.strip()
        try:
            door.principal = await db(authenticate)(f"Bearer {token}" if token else None)
        except Unauthenticated as exc:  # no key (the default message says how), or a bad one
            door.key_problem = f"{KEY_ENV}: {exc}" if token else ""
        return door

    # --- lifecycle ----------------------------------------------------------------------

    async def initialize(self, req: s.InitializeRequest, raw: dict) -> dict:
        caps = req.client_capabilities
        meta = (caps.field_meta if caps else None) or {}
        self.client = Client(
            name=req.client_info.name if req.client_info else "",
            opted_in=bool(meta.get(SUSPEND_META)),
            forms=bool(caps and caps.elicitation and caps.elicitation.form is not None),
            initialized=True,
        )
        response = s.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(embedded_context=True),
                session_capabilities=s.SessionCapabilities(
                    list=s.SessionListCapabilities(),
                    resume=s.SessionResumeCapabilities(),
                    close=s.SessionCloseCapabilities(),
                ),
                field_meta={SUSPEND_META: SUSPEND_CAPS},
            ),
            agent_info=s.Implementation(name="taskdeck", title="Taskdeck", version="0.1.0"),
            auth_methods=[
                s.EnvVarAuthMethod(
                    type="env_var",
                    id=AUTH_METHOD,
                    name="Taskdeck API key",
                    description="A key made with `manage.py create_api_key NAME --scopes "
                    "read,write`; or pass it as authenticate _meta taskdeck/apiKey.",
                    vars=[s.AuthEnvVar(name=KEY_ENV, label="Taskdeck API key")],
                )
            ],
        )
        out = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        out["agentCapabilities"].update(SUSPEND_CAPS)  # the seed writes them at the root
        return out

    async def authenticate(self, req: s.AuthenticateRequest, raw: dict) -> dict:
        if req.method_id != AUTH_METHOD:
            raise invalid_params({"methodId": [f'must be "{AUTH_METHOD}"']})
        token = ((req.field_meta or {}).get("taskdeck/apiKey") or "").strip()
        opened_with = conf.PROCESS.api_key if self.opened_with is None else self.opened_with
        token = token or opened_with.strip()
        if not token:
            raise auth_required(f"no key: set {KEY_ENV} or pass _meta taskdeck/apiKey")
        key = await db(api_keys.verify)(token)
        if key is None:
            raise auth_required("unknown or revoked API key")
        self.principal = key_principal(key)
        self.key_problem = ""
        return {}

    # --- sessions -----------------------------------------------------------------------

    def _modes(self, current: str) -> dict[str, Any]:
        modes = [
            s.SessionMode(id=sk["id"], name=sk["name"], description=sk.get("description"))
            for sk in skills.catalog()
        ]
        state = s.SessionModeState(current_mode_id=current, available_modes=modes)
        return state.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _attach(
        self, session, *, replayed: tuple[dict[str, int], int] | None = None
    ) -> LiveSession:
        """Follow `session` on this connection from now on (or from where a replay ended)."""
        live = self.live.get(session.session_id)
        if live is None:
            cursors, floor = replayed or await db(sessions.attach_point)(session)
            live = LiveSession(self, session, cursors, floor)
            self.live[session.session_id] = live
            live.start()
            # after the answer that names the session (queued behind it by the SDK)
            live.spawn(live.send(commands.available_commands()))
        else:
            live.session = session  # the row as read now: another editor may have moved it
        return live

    async def _live(self, session_id: str, principal: Principal) -> LiveSession:
        session = await db(sessions.get_session)(session_id, principal.actor)
        return await self._attach(session)

    async def new_session(self, req: s.NewSessionRequest, raw: dict) -> dict:
        principal = self._need("write")
        session = await db(sessions.open_session)(req.cwd, actor=principal.actor)
        await self._attach(session)
        return {"sessionId": session.session_id, "modes": self._modes(session.skill)}

    async def load_session(self, req: s.LoadSessionRequest, raw: dict) -> dict:
        principal = self._need("read")
        session = await db(sessions.get_session)(req.session_id, principal.actor)
        await db(rate_limits.take)("resync", principal.actor)  # a replay is a resync
        await db(sessions.reopen)(session)
        old = self.live.pop(session.session_id, None)
        if old is not None:
            await old.stop()
        await self._attach(session, replayed=await LiveSession.replay(self, session))
        return {"modes": self._modes(session.skill)}

    async def resume_session(self, req: s.ResumeSessionRequest, raw: dict) -> dict:
        """Stable `session/resume`: reattach without replay. With the seed's fields
        (`handle`, `input`, `continueTranscript`, at the root or in `_meta`) it also resumes
        the session's suspended task — and only then (docs/design/acp-door.md, D64)."""
        meta = req.field_meta or {}
        seed = {
            k: raw[k] if k in raw else meta[k] for k in SEED_RESUME_FIELDS if k in raw or k in meta
        }
        principal = self._need("write" if seed else "read")
        session = await db(sessions.get_session)(req.session_id, principal.actor)
        await db(sessions.reopen)(session)
        live = await self._attach(session)
        out: dict[str, Any] = {"modes": self._modes(session.skill)}
        if not seed:
            return out
        continue_transcript = seed.get("continueTranscript", True)
        outcome = await db(sessions.resume)(
            session,
            actor=principal.actor,
            handle=seed.get("handle"),
            resume_input=seed.get("input"),
            continue_transcript=True if continue_transcript is None else continue_transcript,
        )
        live.poke()
        susp = outcome.suspension
        out["_meta"] = {
            SUSPEND_META: {
                "handle": susp.handle if susp else None,
                "cause": susp.cause if susp else Suspension.Cause.EXPLICIT_RESUME,
                "hadResumeInput": bool(susp and susp.had_resume_input),
                "continueTranscript": susp.continue_transcript if susp else True,
                "resumedAt": ts(susp.ended_at if susp else None),
            },
            TASK_META: {"taskId": outcome.task.id, "state": outcome.task.state},
        }
        return out

    async def list_sessions(self, req: s.ListSessionsRequest, raw: dict) -> dict:
        principal = self._need("read")
        page, next_cursor = await db(sessions.list_sessions)(
            req.cwd, req.cursor, actor=principal.actor
        )
        infos = [
            s.SessionInfo(
                session_id=row.session_id,
                cwd=row.cwd,
                title=row.title or None,
                updated_at=ts(row.updated_at),
                # closed, still loadable (session/load or resume opens it again)
                field_meta={TASK_META: {"closed": True, "closedAt": ts(row.closed_at)}}
                if row.closed_at
                else None,
            )
            for row in page
        ]
        response = s.ListSessionsResponse(sessions=infos, next_cursor=next_cursor)
        return response.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def close_session(self, req: s.CloseSessionRequest, raw: dict) -> dict:
        """Close: the agent stops its work for this connection. A prompt still running is
        canceled (as `session/cancel`); a suspended task stays suspended. A session with a
        task stays in `session/list`, marked closed, to be loaded again."""
        principal = self._need("write")
        session = await db(sessions.get_session)(req.session_id, principal.actor)
        live = self.live.pop(session.session_id, None)
        if live is not None:
            if live.turn is not None:
                await live.cancel_turn(principal.actor, "the editor closed the session")
            await live.stop()
        await db(sessions.close)(session)
        return {}

    async def set_mode(self, req: s.SetSessionModeRequest, raw: dict) -> dict:
        principal = self._need("write")
        session = await db(sessions.get_session)(req.session_id, principal.actor)
        await db(sessions.set_mode)(session, req.mode_id)
        if (live := self.live.get(session.session_id)) is not None:
            live.session.skill = req.mode_id
            update = s.CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=req.mode_id
            )
            live.spawn(live.send(update.model_dump(mode="json", by_alias=True)))
        return {}

    # --- turns ---------------------------------------------------------------------------

    async def prompt(self, req: s.PromptRequest, raw: dict) -> dict:
        principal = self._need("write")
        if undeclared := _undeclared(req.prompt):  # whatever the session: nothing read
            raise invalid_params(undeclared)
        live = await self._live(req.session_id, principal)
        parts = [part for block in req.prompt if (part := _part(block)) is not None]
        if not parts:
            raise invalid_params({"prompt": ["holds no text or resource Taskdeck can read"]})
        command = commands.parse(parts)
        if command is not None:  # taken during a turn too: it never waits for one
            return await self.run_command(live, command, principal)
        # Like A2A's params.metadata: what a new task's agent reads (items, build, pace …)
        metadata = (req.field_meta or {}).get(METADATA_META) or {}
        if not isinstance(metadata, dict):
            raise invalid_params({f"_meta.{METADATA_META}": ["must be an object"]})
        stop, meta = await live.run_turn(parts, principal.actor, metadata)
        out: dict[str, Any] = {"stopReason": stop}
        if meta:
            out["_meta"] = meta
        return out

    async def cancel(self, req: s.CancelNotification, raw: dict) -> None:
        """During a turn: cancel the turn's task. Between turns: cancel the session's task
        when it waits on an open question or works on in the background; a paused task
        stays paused (someone holds it; `/cancel` cancels it). docs/acp.md, "Commands"."""
        principal = self._need("write")
        live = self.live.get(req.session_id)
        if live is not None and live.turn is not None:
            await live.cancel_turn(principal.actor, "canceled from the editor (session/cancel)")
            return
        try:
            session = await db(sessions.get_session)(req.session_id, principal.actor)
        except SessionNotFound:
            return  # a notification has no answer to carry the error
        await db(sessions.cancel)(
            session,
            actor=principal.actor,
            reason="canceled from the editor between turns (session/cancel)",
            unless_paused=True,
        )
        if live is not None:
            live.poke()

    # --- commands (docs/acp.md, "Commands") -----------------------------------------------

    async def run_command(
        self, live: LiveSession, command: commands.Command, principal: Principal
    ) -> dict:
        """A slash command: the same services as its RFC method; its answer is said as an
        agent message and the prompt ends `end_turn` at once (a command never holds a turn,
        and is taken while another prompt's turn runs). A refusal names the way out."""
        name, arg = command.name, command.arg
        try:
            if name == "answer":
                return await self._answer_command(live, arg, principal)
            said, meta = await self._command(live, name, arg, principal)
        except (TransitionRefused, NotAllowedNow) as exc:
            mapped = from_domain(exc)
            state = str(exc.state or "")
            detail = f"{mapped.data['detail']}; {commands.way_out(state)}"
            raise RequestError(
                mapped.code, str(mapped), {**mapped.data, "detail": detail}
            ) from None
        live.poke()
        await live.send(commands.say(said))
        out: dict[str, Any] = {"stopReason": "end_turn"}
        if meta:
            out["_meta"] = meta
        return out

    async def _command(
        self, live: LiveSession, name: str, arg: str, principal: Principal
    ) -> tuple[str, dict[str, Any]]:
        session, actor = live.session, principal.actor
        if name == "status":
            return await db(sessions.status)(session), {}
        if name == "suspend":
            mode, reason = commands.suspend_args(arg)
            outcome = await db(sessions.suspend)(
                session, actor=actor, reason=reason, resume_when=None, mode=mode
            )
            susp = outcome.suspension
            meta = {SUSPEND_META: {"handle": susp.handle, "mode": susp.mode}}
            return commands.suspending(susp.mode, reason, outcome.task.state), meta
        if name == "resume":
            outcome = await db(sessions.resume)(
                session,
                actor=actor,
                handle=None,
                resume_input=commands.resume_input(arg),
                continue_transcript=True,
            )
            meta = {TASK_META: {"taskId": outcome.task.id, "state": outcome.task.state}}
            return f"Resuming task {outcome.task.id}.", meta
        # cancel: the turn running here (it ends `cancelled`), else the session's task
        reason = "canceled from the editor (/cancel)"
        if live.turn is not None:
            await live.cancel_turn(actor, reason)
            return "Canceling the task.", {}
        if await db(sessions.cancel)(session, actor=actor, reason=reason):
            return "Canceled the task.", {}
        return "Nothing to cancel: the session has no running task.", {}

    async def _answer_command(self, live: LiveSession, arg: str, principal: Principal) -> dict:
        """`/answer …`: the open question's answer, as if typed; the turn follows the task."""
        if not arg:
            raise invalid_params({"answer": ["type the answer after /answer, e.g. /answer yes"]})
        if await db(sessions.open_question)(live.session) is None:
            raise RequestError(
                NOT_NOW,
                "Not possible now",
                {"detail": "there is no open question to answer; type /status to see the task"},
            )
        stop, meta = await live.run_turn([{"kind": "text", "text": arg}], principal.actor, {})
        out: dict[str, Any] = {"stopReason": stop}
        if meta:
            out["_meta"] = meta
        return out

    async def suspend(self, req: None, raw: dict) -> dict:
        """The seed's `session/suspend {sessionId, reason?, resumeWhen?, mode?}` → `{handle,
        reason, suspendedAt, resumeWhen, summary}`. A prompt in flight ends with end_turn."""
        errors: dict[str, list[str]] = {}
        for key in sorted(set(raw) - {"sessionId", "reason", "resumeWhen", "mode", "_meta"}):
            errors[key] = ["unknown field"]
        if not isinstance(raw.get("sessionId"), str):
            errors["sessionId"] = ["must be a string"]
        for key in ("reason", "mode"):
            if raw.get(key) is not None and not isinstance(raw[key], str):
                errors[key] = ["must be a string"]
        if errors:
            raise invalid_params(errors)
        principal = self._need("write")
        live = await self._live(raw["sessionId"], principal)
        outcome = await db(sessions.suspend)(
            live.session,
            actor=principal.actor,
            reason=raw.get("reason") or "",
            resume_when=raw.get("resumeWhen"),
            mode=raw.get("mode") or Suspension.Mode.FINISH_STEP,
        )
        live.poke()
        susp = outcome.suspension
        out: dict[str, Any] = {
            "handle": susp.handle,
            "reason": susp.reason,
            "suspendedAt": ts(susp.suspended_at),
            "summary": sessions.summary(outcome.task),
            "_meta": {
                TASK_META: {
                    "taskId": outcome.task.id,
                    "state": outcome.task.state,
                    "mode": susp.mode,
                    "deadline": ts(susp.deadline),
                }
            },
        }
        if susp.conditions:
            out["resumeWhen"] = susp.conditions
        return out


# What `initialize` declares in promptCapabilities (embeddedContext only): a block of a
# kind it did not declare is refused, never taken in (ACP: clients must not send them).
UNDECLARED_BLOCKS = {"image": "image", "audio": "audio"}


def _undeclared(prompt: list[Any]) -> dict[str, list[str]]:
    """The prompt's content blocks this agent did not declare (-32602), by position."""
    found = {}
    for i, block in enumerate(prompt):
        kind = getattr(block, "type", "")
        if kind in UNDECLARED_BLOCKS:
            found[f"prompt.{i}"] = [
                f"{kind} content is not accepted: this agent declares "
                f"promptCapabilities.{UNDECLARED_BLOCKS[kind]} = false"
            ]
    return found


def _part(block: Any) -> dict[str, Any] | None:
    """A prompt content block as a stored message part (A2A 0.3 form)."""
    if isinstance(block, s.TextContentBlock):
        return {"kind": "text", "text": block.text}
    if isinstance(block, s.EmbeddedResourceContentBlock):
        res = block.resource
        if isinstance(res, s.TextResourceContents):
            return {"kind": "text", "text": f"{res.uri}\n{res.text}"}
        return {
            "kind": "file",
            "file": {"bytes": res.blob, "uri": res.uri, "mimeType": res.mime_type or ""},
        }
    if isinstance(block, s.ResourceContentBlock):
        return {"kind": "text", "text": block.uri}
    return None  # image and audio blocks were refused (_undeclared)


def max_line_bytes() -> int:
    return conf.ACP.max_line_bytes
