"""Drive Taskdeck with the official a2a-sdk client; run ONLY with .venv-interop/bin/python -I.

The SDK's import name is `a2a`, like Taskdeck's Django app, so this file never runs in the
project's interpreter: tests/interop/test_sdk_client.py starts it in a subprocess from the
separate virtualenv, in isolated mode (-I) so the repository's `a2a/` cannot shadow it.

Input: one JSON object as argv[1] (or on stdin):
    {"base": "http://127.0.0.1:8000", "token": "...", "binding": "JSONRPC",
     "action": "...", "args": {...}}
or, to save interpreter starts, several actions run one after the other:
    {"base": ..., "token": ..., "binding": ..., "steps": [{"action": "...", "args": {...}}]}
A step may carry its own "token" or "binding" (else the command's). `binding` is the one
protocol binding the SDK may use (ClientConfig.supported_protocol_bindings): JSONRPC,
HTTP+JSON or GRPC; the SDK finds its interface in the card fetched from `base`. A task_id
arg "$last" stands for the task id of the last event printed with one.
A step's "client" says which client reads the card (default "sdk"):
    sdk     create_client(base): the SDK fetches the card, with `A2A-Version: 1.0`
    plain   a 1.0 client that fetches the card without `A2A-Version` (a plain GET), read
            by the SDK's parse_agent_card
    0.3     a 0.3 client: the card (fetched without the header, as the 0.3 line's SDK
            does) read by the 0.3 card model (a2a.compat.v0_3.types.AgentCard, the 0.3
            SDK's `AgentCard`), so only its 0.3 fields count; to_core_agent_card then
            gives the interface the 0.3 fields name, which the SDK speaks 0.3 to
            (CompatJsonRpcTransport: 0.3 method names, `A2A-Version: 0.3`)
Output: one JSON object per line, flushed at once so a test can react while a stream runs:
    {"event": {...}}      what the SDK yielded or returned, summarised (see `summary`);
                          for action "card", the card and transport the SDK chose
    {"disconnected": true, "last": {...}}   a stream left after max_events
    {"error": "TaskNotFoundError", "message": "...", "data": ...}   an A2AError raised
                          (also any other exception, e.g. the factory's ValueError when the
                          card has no interface of the binding; "sdk_error": false then)
    {"done": true}        the action finished (each step ends with "done" or "error")
States are printed as the SDK's enum names (TaskState.Name), exactly what a user would see
(a number the enum has no name for, as gRPC may deliver, as that number: "101").

The API key travels as an SDK user passes one: an AuthInterceptor with a credential
service, which reads the card's security requirements (scheme `bearer`, HTTP Bearer) and
puts `Authorization: Bearer <key>` in the call's service parameters; the transports send
them as HTTP headers (JSON-RPC, HTTP+JSON) or as gRPC metadata (`authorization`). The card
itself is fetched without it (it is public).

Actions and their args:
    card                                        the resolved card and interface, the SDK
                                                version and its TaskState names
    send      text, message_id, metadata, return_immediately, task_id, context_id
                                                SendMessage (blocking unless
                                                return_immediately)
    stream    same as send, max_events          SendStreamingMessage until the server ends
                                                it; with max_events, hang up after that many
    get       task_id, history_length           GetTask
    cancel    task_id                           CancelTask
    subscribe task_id, max_events               SubscribeToTask; with max_events, hang up
                                                after that many events
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from importlib.metadata import version
from typing import Any

import grpc
import httpx
from a2a.client import ClientConfig, create_client
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import to_core_agent_card
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict


def emit(**line: Any) -> None:
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()


def _dict(message) -> dict:
    return MessageToDict(message)


def _text(message) -> str:
    return "".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


def _status(status) -> dict:
    value = int(status.state)
    # proto3 enums are open: a number the SDK's TaskState lacks is kept (gRPC) and shown as
    # the number itself, "101"; the JSON bindings' lenient parse drops an unknown name (0)
    name = TaskState.Name(value) if value in TaskState.values() else str(value)
    out = {"state": name, "state_value": value}
    if status.HasField("message"):
        out["text"] = _text(status.message)
        out["message"] = _dict(status.message)
    if status.HasField("timestamp"):
        out["timestamp"] = status.timestamp.ToJsonString()
    return out


def _artifact(artifact) -> dict:
    return {"artifact_id": artifact.artifact_id, "parts": [_dict(p) for p in artifact.parts]}


def summary(kind: str, obj) -> dict:
    """What the SDK handed over, as plain JSON (proto enums by name)."""
    out: dict[str, Any] = {"kind": kind}
    if kind == "task":
        out.update(
            task_id=obj.id,
            context_id=obj.context_id,
            **_status(obj.status),
            artifacts=[_artifact(a) for a in obj.artifacts],
            history=len(obj.history),
        )
    elif kind == "status_update":
        out.update(task_id=obj.task_id, context_id=obj.context_id, **_status(obj.status))
    elif kind == "artifact_update":
        out.update(
            task_id=obj.task_id,
            context_id=obj.context_id,
            artifact=_artifact(obj.artifact),
            append=obj.append,
            last_chunk=obj.last_chunk,
        )
    elif kind == "message":
        out.update(text=_text(obj), message=_dict(obj))
    if obj.HasField("metadata"):
        out["metadata"] = _dict(obj.metadata)
    return out


def stream_event(ev) -> dict:
    kind = ev.WhichOneof("payload")
    return summary(kind, getattr(ev, kind))


def request(args: dict) -> SendMessageRequest:
    msg = Message(
        role=Role.ROLE_USER,
        message_id=args.get("message_id") or f"interop-{uuid.uuid4()}",
        parts=[Part(text=args.get("text", "hello"))],
    )
    if args.get("task_id"):
        msg.task_id = args["task_id"]
    if args.get("context_id"):
        msg.context_id = args["context_id"]
    req = SendMessageRequest(message=msg)
    if args.get("metadata"):
        req.metadata.update(args["metadata"])
    if args.get("return_immediately"):
        req.configuration.return_immediately = True
    return req


class Key(CredentialService):
    """The one API key, for whatever scheme the card asks it for."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name: str, context) -> str | None:
        return self.token or None


async def card_for(base: str, reader: str):
    """What create_client is given: the base URL (the SDK fetches the card itself), or the
    card as a client that sends no A2A-Version reads it (see the module's docstring)."""
    if reader == "sdk":
        return base
    async with httpx.AsyncClient(timeout=10.0) as plain:  # no A2A-Version header
        response = await plain.get(f"{base}/.well-known/agent-card.json")
        response.raise_for_status()
        raw = response.json()
    if reader == "plain":
        return parse_agent_card(raw)
    if reader == "0.3":
        return to_core_agent_card(types_v03.AgentCard.model_validate(raw))
    raise SystemExit(f"unknown client {reader!r}")


async def act(http: httpx.AsyncClient, cmd: dict, step: dict, last: dict) -> None:
    action, args = step["action"], dict(step.get("args") or {})
    if args.get("task_id") == "$last":
        args["task_id"] = last["task_id"]
    token = step.get("token", cmd.get("token", ""))
    dialed: list[str] = []

    def channel(url: str) -> grpc.aio.Channel:  # what the SDK asks for the GRPC interface
        dialed.append(url)
        return grpc.aio.insecure_channel(url)

    config = ClientConfig(
        httpx_client=http,
        streaming=action in ("stream", "subscribe"),
        supported_protocol_bindings=[step.get("binding") or cmd.get("binding") or "JSONRPC"],
        grpc_channel_factory=channel,
    )
    client = await create_client(
        await card_for(cmd["base"], step.get("client", "sdk")),
        client_config=config,
        interceptors=[AuthInterceptor(Key(token))],
    )

    def out(ev: dict) -> dict:
        if ev.get("task_id"):
            last["task_id"] = ev["task_id"]
        emit(event=ev)
        return ev

    try:
        if action == "card":
            card = client._card  # what create_client resolved (no public accessor in 1.3.0)
            transport = client._transport
            out(
                {
                    "kind": "card",
                    "sdk_version": version("a2a-sdk"),
                    "name": card.name,
                    "streaming": card.capabilities.streaming,
                    "interfaces": [_dict(i) for i in card.supported_interfaces],
                    "security_requirements": [
                        sorted(r.schemes) for r in card.security_requirements
                    ],
                    "security_schemes": {
                        name: scheme.WhichOneof("scheme")
                        for name, scheme in card.security_schemes.items()
                    },
                    "transport": type(transport).__name__,
                    # the interface's url the transport talks to (gRPC: what it dialed)
                    "url": getattr(transport, "url", None) or (dialed[0] if dialed else None),
                    "task_states": list(TaskState.keys()),
                }
            )
        elif action in ("send", "stream"):
            limit, seen, ev = args.get("max_events"), 0, None
            async for item in client.send_message(request(args)):
                ev = out(stream_event(item))
                seen += 1
                if limit is not None and seen >= limit:
                    break  # leaving the iterator closes the response / the call: a hang-up
            if limit is not None and seen >= limit:
                emit(disconnected=True, last=ev)
        elif action == "get":
            req = GetTaskRequest(id=args["task_id"])
            if args.get("history_length") is not None:
                req.history_length = args["history_length"]
            out(summary("task", await client.get_task(req)))
        elif action == "cancel":
            task = await client.cancel_task(CancelTaskRequest(id=args["task_id"]))
            out(summary("task", task))
        elif action == "subscribe":
            limit, seen, ev = args.get("max_events"), 0, None
            req = SubscribeToTaskRequest(id=args["task_id"])
            async for item in client.subscribe(req):
                ev = out(stream_event(item))
                seen += 1
                if limit is not None and seen >= limit:
                    break  # leaving the iterator closes the response / the call: a hang-up
            if limit is not None and seen >= limit:
                emit(disconnected=True, last=ev)
        else:
            raise SystemExit(f"unknown action {action!r}")
    finally:
        await client.close()


async def run(cmd: dict) -> None:
    steps = cmd.get("steps") or [{"action": cmd["action"], "args": cmd.get("args") or {}}]
    last: dict[str, str] = {}
    # One httpx client for the HTTP bindings and the card; the SDK's factory adds
    # `A2A-Version: 1.0` to its headers (gRPC: `a2a-version` metadata on each call).
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=float(cmd.get("read_timeout", 60)))
    ) as http:
        for step in steps:
            try:
                await act(http, cmd, step, last)
                emit(done=True)
            except A2AError as exc:  # A2AClientError (HTTP, timeouts, bad answers) included
                emit(error=type(exc).__name__, message=exc.message, data=exc.data)
            except Exception as exc:  # the SDK refused otherwise (e.g. no such interface)
                emit(error=type(exc).__name__, message=str(exc), data=None, sdk_error=False)


def main() -> None:
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    asyncio.run(run(json.loads(raw)))


if __name__ == "__main__":
    main()
