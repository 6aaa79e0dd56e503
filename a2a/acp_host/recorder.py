"""An agent's `session/update`s written into its task, in the order the agent sent them.

The SDK runs each incoming notification as a task of its own, so the handler only
appends the update to a queue (no await before that: arrival order is kept), and one
drain at a time writes them through the services:
- `agent_message_chunk` text → gathered, written as one agent message when something
  else comes between (a tool call, a permission request) or the turn ends;
- an embedded resource or a resource link → an artifact;
- `tool_call` / `tool_call_update` → a timeline entry (services.note_tool_call), which
  says which of the two it was: the ACP door passes it on to an editor as the same;
- `plan` → progress (completed entries of all entries) with the entries, which the ACP
  door passes on as a `plan`;
- thoughts, command lists, modes → not recorded (the agent's inner workings).
Output the task does not take now (paused with finish_step: the turn's output is held)
waits, in order, until the task works again. A turn that writes more than
MAX_TURN_BYTES of text is cancelled: a flooding agent cannot fill the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acp import schema as s

from a2a import conf, services
from a2a.errors import NotAllowedNow, TaskError
from a2a.lifecycle import TERMINAL
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.services import checks
from a2a.validation import ValidationFailed

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun

log = logging.getLogger(__name__)


def _content_text(blocks: list[Any] | None) -> str:
    out = []
    for b in blocks or []:
        inner = getattr(b, "content", None)
        if isinstance(inner, s.TextContentBlock):
            out.append(inner.text)
    return "\n".join(out)


class Recorder:
    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.queue: list[Any] = []
        self.held: list[Callable[[], Any]] = []  # writes refused for now, in order
        self.text: list[str] = []
        self.text_since = 0.0  # loop time of the oldest gathered chunk
        self.lock = asyncio.Lock()
        self.muted = False  # a session/load replay: history already recorded
        self.turn_bytes = 0
        self.over_limit = False
        self.cancel_note = ""
        self.tools: dict[str, tuple[str, str]] = {}  # toolCallId -> (title, kind) as started

    def new_turn(self) -> None:
        self.turn_bytes, self.over_limit, self.cancel_note = 0, False, ""

    def receive(self, update: Any) -> None:
        """The client's session_update: queue it (synchronously: order is arrival order;
        the caller then awaits `drain`, so the SDK answers a prompt only once its updates
        are written)."""
        if self.muted:
            return
        self.queue.append(update)

    async def drain(self) -> None:
        async with self.lock:
            while self.queue:
                await self._apply(self.queue.pop(0))

    async def _apply(self, u: Any) -> None:
        text_chunk = isinstance(u, s.AgentMessageChunk) and isinstance(
            u.content, s.TextContentBlock
        )  # every update counts against the turn's limit, not only its text
        if not text_chunk and await self._over(len(u.model_dump_json(exclude_none=True))):
            return
        if isinstance(u, s.AgentMessageChunk):
            block = u.content
            if isinstance(block, s.TextContentBlock):
                await self._text(block.text)
            elif isinstance(block, (s.EmbeddedResourceContentBlock, s.ResourceContentBlock)):
                await self.flush_text()
                await self._write(lambda: self._artifact(block))
        elif isinstance(u, (s.ToolCallStart, s.ToolCallProgress)):
            await self.flush_text()
            # an update names only what changed: the timeline shows the call's title
            title, kind = self.tools.get(u.tool_call_id, ("", ""))
            title, kind = (u.title or title)[:500], str(u.kind or kind)
            if len(self.tools) < 1000:
                self.tools[u.tool_call_id] = (title, kind)
            fields = {
                "tool_call_id": u.tool_call_id,
                "title": title,
                "kind": kind,
                "status": str(u.status or "") if u.status else "",
                "content": _content_text(u.content),
                "update": isinstance(u, s.ToolCallProgress),  # ACP's tool_call_update
            }
            await self._write(
                lambda: services.note_tool_call(self.run.task_id, actor=self.run.actor, **fields)
            )
        elif isinstance(u, s.AgentPlanUpdate):
            total = len(u.entries)
            done = sum(1 for e in u.entries if str(e.status) == "completed")
            if total:
                await self.flush_text()
                plan = [
                    {"content": e.content[:2000], "priority": str(e.priority),
                     "status": str(e.status)}
                    for e in u.entries[:100]
                ]  # fmt: skip
                await self._write(
                    lambda: services.report_progress(
                        self.run.task_id, done, total, actor=self.run.actor, plan=plan
                    )
                )

    async def _over(self, size: int) -> bool:
        """Count `size` bytes against the turn's limit; True once it is passed (the rest of
        the turn is dropped and the turn cancelled, once)."""
        if self.over_limit:
            return True
        self.turn_bytes += size
        limit = conf.ACP_HOST.max_turn_bytes
        if self.turn_bytes <= limit:
            return False
        self.over_limit = True
        await self.flush_text()
        await self.run.note(
            "output_limit", f"the agent wrote more than {limit} bytes in one turn: cancelled"
        )
        await self.run.turns.cancel("")
        return True

    async def _text(self, text: str) -> None:
        if await self._over(len(text.encode())):
            return
        text = text.replace("\x00", "")  # not storable; one would drop the whole message
        if not self.text:
            self.text_since = asyncio.get_running_loop().time()
        self.text.append(text)
        if sum(len(t) for t in self.text) >= checks.MAX_TEXT:
            await self.flush_text()

    async def flush_if_older(self, seconds: float) -> None:
        """During a long turn, what the agent said is written every `seconds` at the latest:
        operators watch it happen instead of waiting for the turn's end."""
        if self.text and asyncio.get_running_loop().time() - self.text_since >= seconds:
            await self.drain()
            await self.flush_text()

    async def flush_text(self) -> None:
        if not self.text:
            return
        text, self.text = "".join(self.text), []
        for start in range(0, len(text), checks.MAX_TEXT):
            piece = text[start : start + checks.MAX_TEXT]
            if piece.strip():
                await self._write(
                    lambda p=piece: services.emit_text(self.run.task_id, p, actor=self.run.actor)
                )

    def _artifact(self, block: Any) -> Any:
        if isinstance(block, s.EmbeddedResourceContentBlock):
            res = block.resource
            part: dict[str, Any]
            if isinstance(res, s.TextResourceContents):
                part = {"kind": "text", "text": res.text}
            else:
                part = {"kind": "file", "file": {"uri": res.uri, "bytes": res.blob,
                                                  "mimeType": res.mime_type or ""}}  # fmt: skip
            uri = res.uri
        else:
            part = {"kind": "file", "file": {"uri": block.uri, "mimeType": block.mime_type or ""}}
            uri = block.uri
        name = uri.rstrip("/").rsplit("/", 1)[-1][:200] or "resource"
        return services.add_artifact(
            self.run.task_id, actor=self.run.actor, parts=[part], name=name,
            description=uri[:1000], metadata={"uri": uri},
        )  # fmt: skip

    async def _write(self, fn: Callable[[], Any]) -> None:
        if self.held:
            self.held.append(fn)
            return
        try:
            await in_db(fn)()
        except NotAllowedNow:
            self.held.append(fn)  # paused: written when the task works again
        except (TaskError, ValidationFailed) as exc:
            log.warning(
                "task %s: an update of the agent was not recorded: %s", self.run.task_id, exc
            )

    async def retry_held(self, state: str) -> None:
        """Write held output once the task takes output again (or drop it: it ended)."""
        if not self.held:
            return
        if state in TERMINAL:
            self.held.clear()
            return
        while self.held:
            try:
                await in_db(self.held[0])()
            except NotAllowedNow:
                return
            except (TaskError, ValidationFailed) as exc:
                log.warning("task %s: held output not recorded: %s", self.run.task_id, exc)
            self.held.pop(0)
