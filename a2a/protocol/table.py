"""What the A2A method table is made of: `Call` (one call's context), `Method` (a handler,
its params serializer and scope) and the send hooks.

Kept apart from the table itself (`a2a.protocol.methods`) so that an app adding methods
(a2a.push.methods) imports these types without importing the table: the table imports
the apps' methods when it is built (a2a/protocol/extensions.py), which would otherwise be
an import cycle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a.auth import Principal
from a2a.lifecycle import Dialect

if TYPE_CHECKING:
    from rest_framework import serializers

    from a2a import services


@dataclass(frozen=True)
class Call:
    principal: Principal
    dialect: Dialect
    last_event_id: int | None = None  # from the Last-Event-ID header of a reconnecting stream
    version: str = "0.3"  # the wire version of the method called: "0.3" or "1.0"
    # A blocking send: its answer is read once the task settles (a2a.jsonrpc.views), so
    # the handler returns only {"id": ...} — reading the whole task now cost a blocking
    # send a fifth of its web process's CPU, for an answer thrown away.
    settle_first: bool = False
    base_url: str = ""  # where the caller reached us (cards name their interfaces under it)

    @property
    def actor(self) -> services.Actor:
        return self.principal.actor


# Apps that act on a message's `configuration` add a hook here through
# a2a/protocol/extensions.py (a2a.push: inline webhook configs); the core never imports
# them. A hook sees the configuration before anything is written and raises
# ValidationFailed to refuse the whole request; it returns what to do with the task id
# once the message is delivered (in the same transaction), or None when the
# configuration is not its business.
SendHook = Callable[[dict[str, Any], "Call"], Callable[[str], Any] | None]
SEND_HOOKS: list[SendHook] = []


@dataclass(frozen=True)
class Method:
    handler: Callable[[dict[str, Any], Call], Any]
    params: type[serializers.Serializer]
    scope: str
    streaming: bool = False  # the handler returns a StreamPlan; the answer is SSE
    version: str = "0.3"  # 1.0 methods take 1.0 params and answer in the 1.0 wire format
    # 1.0 methods: turns the handler's 0.3-shaped result into the 1.0 wire format
    to_10: Callable[[Any], Any] | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        """Every scope a caller needs: streams of a task's events read it as well. A method
        with no scope is open to any API key (the extended card)."""
        if not self.scope:
            return ()
        return (self.scope, "read") if self.streaming and self.scope != "read" else (self.scope,)
