"""`/ws/agui/`: the live view over a WebSocket, as AG-UI events.

On connect: STATE_SNAPSHOT of the view, then ACTIVITY_SNAPSHOT for each pending
interrupt and pause of its tasks; then STATE_DELTA / ACTIVITY_* as tasks change. Every view
entry holds its task's `version`, and each task's changes arrive one version at a time:
the socket drops what the snapshot already holds, fills a gap from the log if it sees one,
and a client that detects one anyway sends {"type": "resync"} for a fresh snapshot. When
the log's retention deleted rows before this process read them (agui/fanout.py), the socket
sends a fresh STATE_SNAPSHOT by itself: never a silent gap. While the projection lags more
than a notice's threshold the socket also gets CUSTOM `taskdeck.lag` events ({"seconds":
n}, and 0 when it caught up; agui/fanout.py): the view is behind, the tasks are not.

No message outgrows the WebSocket server's limit (Daphne refuses anything over 1 MiB and
closes the socket with 1011): the snapshot is cut to TASKDECK["VIEW"]["SNAPSHOT_BYTES"]
(`selectors.window`; a cut one says `truncated`), and a cut socket follows the tasks it
holds plus the ones that enter the view after its snapshot. Every other message carries
one task's change, or (a STATE_DELTA) the changes of one batch from the log, at most one
per task (`_send_merged`); one that would not fit anyway is not sent, and a fresh snapshot
is.

Authentication: the session (dashboard) or an API key with the `read` scope in the
Authorization header; origins are checked by AllowedHostsOriginValidator (routing.py).

What a socket may cost the server (issue 31): opens are counted per tenant
(TASKDECK_RATE_SOCKET a minute, a2a/rate_limits.py); one over it is accepted and closed at
once with 4429 and a reason saying when to retry. Every socket shares the process's one log
reader (agui/fanout.py), and what a socket leaves behind is removed however it ends (even
when Daphne cancels a consumer still opening: `__call__`). A socket that stops reading is
closed by the server (dashboard/websocket_limits.py: 4008 once its send buffer passes
TASKDECK_VIEW_SOCKET_BUFFER_BYTES), not buffered for without end. Revoked keys and ended
sessions are looked for once per caller per REVALIDATE_SECONDS for all the process's
sockets (`Guards`), not once per socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from ag_ui.core import ActivitySnapshotEvent, StateDeltaEvent, StateSnapshotEvent
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from a2a import conf, rate_limits
from a2a.auth import (
    Unauthenticated,
    authenticate,
    revalidate_seconds,
    still_valid,
    user_actor,
)
from a2a.services import Actor
from agui import backpressure, fanout, selectors, view
from agui.models import AguiEvent, Interrupt

log = logging.getLogger(__name__)
OVERFLOW_CHUNK = 200  # tasks needing a person read at a time after the snapshot
RATE_LIMITED = 4429  # the close code of a socket opened over its tenant's rate (4000 + 429)
MERGED_DELTA_BYTES = 256 * 1024  # a merged STATE_DELTA stays far below SOCKET_MESSAGE_BYTES


def _bundle(
    actor: Actor | None, focus: str | None = None
) -> tuple[int, selectors.Window, list[Interrupt]]:
    """The opening snapshot, within the byte budget (the tasks that need a person which do
    not fit follow it: `Window.more`, read by `resync` after the snapshot went out), the
    counts over every task (`Window.counts`, sent after the activities as a CUSTOM
    `taskdeck.counts`: outside the view's state, which deltas keep), and the activities
    of its tasks; first the newest log row id, read before the
    snapshot, so every row up to it had committed when the snapshot was read (on SQLite
    always; on PostgreSQL but for a late commit)."""
    top = fanout.newest_id()
    budget = view.limits().snapshot_bytes
    window = selectors.window(max_bytes=budget, visible_to=actor, focus=focus, defer_overflow=True)
    window.counts = selectors.counts(actor)
    return top, window, selectors.pending_activities(window.versions, visible_to=actor)


Joining = tuple[dict, int, list[tuple[str, dict]]]  # entry, view version, pending requests
JOIN_READS = 3  # a task changing under every read is taken as its last read says


def _joining(task_id: str, actor: Actor | None) -> tuple[Joining, list] | None:
    """A task that joins a cut socket's window (it now needs a person, or is in the
    socket's focus): its entry and version as they are now, its pending requests, and
    their activities — read together, and again if the entry's version moved between the
    reads. Read apart (the activities after the entry was sent), a change committed in
    between (the request answered or cancelled) left the socket with an ACTIVITY_DELTA for
    an activity it was never sent."""
    found = selectors.entries_now([task_id], actor).get(task_id)
    for _ in range(JOIN_READS):
        if found is None:
            return None
        activities = selectors.pending_activities([task_id], visible_to=actor)
        again = selectors.entries_now([task_id], actor).get(task_id)
        if again is not None and again[1] == found[1]:
            break
        found = again
    return found, activities


def _status_after(task_id: str, events: list[dict]) -> str | None:
    """The status a change leaves the task in, as its STATE_DELTA says (None: unchanged)."""
    path = view.task_path(task_id)
    status = None
    for e in events:
        if e.get("type") != "STATE_DELTA":
            continue
        for o in e.get("delta") or []:
            if o.get("op") in ("add", "replace") and o.get("path") == path + "/status":
                status = o.get("value")
            elif o.get("op") in ("add", "replace") and o.get("path") == path:
                status = (o.get("value") or {}).get("status", status)
    return status


def _touches(task_id: str, events: list[dict], op: str) -> bool:
    """Does this change `add` (enter the view) or `remove` (leave it) the task's entry?"""
    path = view.task_path(task_id)
    return any(
        o.get("op") == op and o.get("path") == path
        for e in events
        if e.get("type") == "STATE_DELTA"
        for o in e.get("delta") or []
    )


def _missing(task_id: str, after: int, before: int) -> list[fanout.Row]:
    return fanout.encoded(
        AguiEvent.objects.filter(task_id=task_id, version__gt=after, version__lt=before)
        .exclude(type="TEXT_MESSAGE")
        .order_by("id")
        .values_list("id", "task_id", "version", "type", "event")
    )


@functools.lru_cache(maxsize=64)
def merged_deltas(texts: tuple[str, ...]) -> str:
    """Several encoded STATE_DELTAs as one, their JSON Patch ops in order (applying them
    one after another is applying their concatenation). Cached on the texts: every socket
    of the process sends the same batch, so it is merged and encoded once, not once per
    socket (the texts are the Tailer's own strings, whose hashes Python keeps)."""
    events = [json.loads(text) for text in texts]
    first = events[0]
    first["delta"] = [op for event in events for op in event["delta"]]
    return json.dumps(first, separators=(",", ":"))


def _principal_from_headers(headers: list[tuple[bytes, bytes]]) -> Actor | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            try:
                principal = authenticate(value.decode("latin-1"))
            except Unauthenticated:
                return None
            return principal.actor if "read" in principal.scopes else None
    return None


def _focus_of(query_string: bytes) -> str | None:
    """`?focus=<state or "paused">` of the socket's address; None when absent or no state."""
    values = parse_qs(query_string.decode("latin-1")).get("focus") or [""]
    return values[0] if view.focus_states(values[0]) else None


Caller = tuple[str, ...]  # who a check is for: ("session", key) or (kind, name)


class Guards:
    """Close every socket of this process whose key was revoked or whose session ended
    (logout, expiry), with 4401, within REVALIDATE_SECONDS: one check per caller per period
    however many sockets it holds, not one per socket. (Each socket checked for itself:
    100 dashboards of one key made 100 reads every 5 s, each its own hop to a thread in
    the event loop that sends every socket its changes; 1,000, 200 reads a second.) One
    loop per process, started by the first socket and ended with the last; a failed
    check (the database away) is logged and made again at the next period."""

    def __init__(self) -> None:
        self.sockets: dict[Caller, set[ViewConsumer]] = {}
        self.callers: dict[Caller, tuple[Actor, str | None]] = {}
        self.task: asyncio.Task | None = None

    def add(self, socket: ViewConsumer, session_key: str | None) -> None:
        who = socket.who
        caller = ("session", session_key) if session_key else (who.kind, who.name)
        socket.caller = caller
        self.sockets.setdefault(caller, set()).add(socket)
        self.callers.setdefault(caller, (who, session_key))
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.task.get_loop() is not loop:
            self.task = loop.create_task(self._run())

    def discard(self, socket: ViewConsumer) -> None:
        caller = getattr(socket, "caller", None)
        held = self.sockets.get(caller)
        if held is None:
            return
        held.discard(socket)
        if not held:
            del self.sockets[caller]
            self.callers.pop(caller, None)

    async def _run(self) -> None:
        while self.sockets:
            await asyncio.sleep(revalidate_seconds())  # a period, not a synchronisation
            callers = dict(self.callers)
            if not callers:
                continue
            try:
                alive = await database_sync_to_async(_still_valid)(callers)
            except Exception:
                log.warning("re-checking the AG-UI sockets' callers failed", exc_info=True)
                continue
            for caller, ok in alive.items():
                if not ok:
                    for socket in list(self.sockets.get(caller, ())):
                        self.discard(socket)
                        with contextlib.suppress(Exception):  # gone meanwhile
                            await socket.close(code=4401)


def _still_valid(callers: dict[Caller, tuple[Actor, str | None]]) -> dict[Caller, bool]:
    return {caller: still_valid(who, key) for caller, (who, key) in callers.items()}


guards = Guards()


class ViewConsumer(AsyncWebsocketConsumer):
    # No channel of its own: the process's Tailer is the one listener on the layer. A
    # channel per socket would mean one Redis receive per socket, which times out under
    # load with hundreds of sockets (seen at 400 in bench/agui_fanout.py --scale-out).
    channel_layer_alias = "no-channel-per-socket"

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            self.who: Actor | None = user_actor(user)  # dashboard users see every task
        else:
            self.who = await database_sync_to_async(_principal_from_headers)(
                self.scope.get("headers", [])
            )
        # A restricted key's socket carries its own tenant's tasks only (a2a/access.py)
        self.mine: dict[str, bool] = {}
        # the states the board is filtered by, held before the rest (`?focus=`, or a
        # resync's "focus"): a cut board filtered by "parked" shows the parks it cut
        self.focus = _focus_of(self.scope.get("query_string", b""))
        if not self.who:
            await self.close(code=4401)
            return
        try:
            await database_sync_to_async(rate_limits.take)("socket", self.who)
        except rate_limits.RateLimited as exc:
            await self.accept()
            reason = f"rate limited: {exc.limit} opens a minute; retry in {exc.retry_after} s"
            await self.close(code=RATE_LIMITED, reason=reason)
            return
        await self.accept()
        self.queue = fanout.tailer().add()  # registered at once: `_drop` removes it
        await fanout.tailer().register_done(self.queue)
        opened = await self._open()
        # the rest of the opening is the pump's first work, not connect's: a client that
        # goes away (the disconnect is handled only once connect returned) cancels it
        self.pump = asyncio.ensure_future(self._pump(opened))
        session = self.scope.get("session")
        key = getattr(session, "session_key", None) if self.who.kind == "operator" else None
        guards.add(self, key)

    async def __call__(self, scope, receive, send) -> None:
        """Whatever ends the consumer (its socket closed, or Daphne cancelling one that is
        still opening, as after a burst of aborted opens), it leaves nothing behind: no
        queue in the reader (which would keep it reading for nobody), no task."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._drop()

    async def disconnect(self, code: int) -> None:
        self._drop()

    def _drop(self) -> None:
        if hasattr(self, "queue"):
            fanout.tailer().unregister(self.queue)
        if hasattr(self, "pump"):
            self.pump.cancel()
        guards.discard(self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        if backpressure.closing(self.base_send):
            # the server is closing this socket (its client stopped reading, or closed it):
            # what the client asked before goes unanswered, instead of a snapshot apiece
            return
        try:
            message = json.loads(text_data or "")
        except (ValueError, RecursionError):  # RecursionError: "[[[[…" a client sent
            await self.send(json.dumps({"type": "error", "message": "send JSON"}))
            return
        if isinstance(message, dict) and message.get("type") == "resync":
            if "focus" in message:
                focus = message.get("focus")
                self.focus = focus if isinstance(focus, str) and view.focus_states(focus) else None
            try:
                await database_sync_to_async(rate_limits.take)("resync", self.who)
            except rate_limits.RateLimited as exc:
                error = {"type": "error", "message": str(exc), "retryAfter": exc.retry_after}
                await self.send(json.dumps(error))
                return
            await self.resync()
        else:
            await self.send(json.dumps({"type": "error", "message": "unknown message"}))

    async def resync(self) -> None:
        """A fresh snapshot; what was queued before it is dropped by version."""
        await self._rest(await self._open())

    async def _open(self) -> tuple[selectors.Window, int]:
        """The opening's first part: the snapshot and its tasks' activities. Returns what
        `_rest` sends on (the window, and which opening this is: a later resync's opening
        ends an earlier one's rest)."""
        top, window, activities = await database_sync_to_async(_bundle)(self.who, self.focus)
        self.opening = getattr(self, "opening", 0) + 1
        self.versions: dict[str, int] = dict(window.versions)  # the tasks this socket holds
        self.truncated = window.truncated
        self.decided = top  # rows up to here: the snapshot holds their task, or cut it
        self.counted = window.counts
        await self._send(StateSnapshotEvent(snapshot=window.snapshot).model_dump(by_alias=True))
        await self._let_it_write()
        await self._activities(activities)
        return window, self.opening

    async def _rest(self, opened: tuple[selectors.Window, int]) -> None:
        """The opening's second part: the tasks needing a person that did not fit (never
        cut), read and sent OVERFLOW_CHUNK at a time with their activities, paced by the
        client; then the counts."""
        window, opening = opened
        budget = view.limits().snapshot_bytes
        while chunk := await database_sync_to_async(window.more)(OVERFLOW_CHUNK):
            if opening != self.opening:
                return  # a resync since: its own opening holds them
            chunk = [item for item in chunk if item[0] not in self.versions]  # joined since
            for task_id, _, _ in chunk:
                self.versions[task_id] = window.versions[task_id]
            for ops in window.overflow_deltas(budget, chunk):
                await self._send(StateDeltaEvent(delta=ops).model_dump(by_alias=True))
                await self._let_it_write()
            ids = [task_id for task_id, _, _ in chunk]
            await self._activities(
                await database_sync_to_async(selectors.pending_activities)(ids, self.who)
            )
        notice = fanout.counts_notice(window.counts)
        await self._send_text(notice.text, "CUSTOM")

    async def _activities(self, interrupts: list[Interrupt]) -> None:
        for interrupt in interrupts:
            event = ActivitySnapshotEvent(
                message_id=interrupt.interrupt_id,
                activity_type=interrupt.kind,
                content=interrupt.content,
            )
            await self._send(event.model_dump(by_alias=True))
            await self._let_it_write()

    async def _let_it_write(self) -> None:
        """Between the opening's messages: until what the server holds for this socket
        has drained (agui/backpressure.py), so a long opening to a client that reads is
        never taken for a client that does not (dashboard/websocket_limits.py)."""
        await backpressure.drained(self.base_send, conf.VIEW.socket_buffer_bytes)

    async def _pump(self, opened: tuple[selectors.Window, int]) -> None:
        await self._rest(opened)
        while True:
            rows = await self.queue.get()
            # far behind, or the log lost rows before they reached us (fanout.RESYNC)
            if rows == fanout.RESYNC or self.queue.qsize() > fanout.QUEUE_LIMIT:
                while not self.queue.empty():
                    self.queue.get_nowait()
                await self.resync()
                continue
            if isinstance(rows, fanout.Notice):  # CUSTOM taskdeck.lag / .counts
                if rows.name == fanout.COUNTS_EVENT:
                    await self._counts(rows)
                else:
                    await self._send_text(rows.text, "CUSTOM")
                continue
            await self._deliver(rows)

    async def _counts(self, notice: fanout.Notice) -> None:
        """The counts changed (agui/fanout.py reads them over every task, once a process):
        pass them on; a restricted key's socket reads its own tenant's instead."""
        if self.who.restricted:
            mine = await database_sync_to_async(selectors.counts)(self.who)
            notice = fanout.counts_notice(mine)
        if notice.value == self.counted:
            return
        self.counted = notice.value
        await self._send_text(notice.text, "CUSTOM")

    def _must_hold(self, status: str | None) -> bool:
        """Does a task in `status` belong in this socket's window however cut it is?"""
        return status in view.NEEDS_PERSON or status in view.focus_states(self.focus)

    async def _join(self, task_id: str) -> bool:
        """A task this cut socket did not hold now needs a person (or entered its focus):
        send it whole, as an `add` of its current entry and pending requests, with their
        activities, and follow it from there. Whether all was sent."""
        found = await database_sync_to_async(_joining)(task_id, self.who)
        if found is None:
            return True  # gone from the view meanwhile: nothing to show
        (entry, version, mine), activities = found
        ops = [{"op": "add", "path": view.task_path(task_id), "value": entry}]
        ops += [{"op": "add", "path": view.pending_path(i), "value": p} for i, p in mine]
        sent = await self._send(StateDeltaEvent(delta=ops).model_dump(by_alias=True))
        self.versions[task_id] = version
        for interrupt in activities:
            event = ActivitySnapshotEvent(
                message_id=interrupt.interrupt_id,
                activity_type=interrupt.kind,
                content=interrupt.content,
            )
            sent &= await self._send(event.model_dump(by_alias=True))
        return sent

    async def _visible(self, rows: list[fanout.Row]) -> list[fanout.Row]:
        """The rows of tasks this socket may see (one query per batch of new task ids)."""
        if not self.who.restricted:
            return rows
        unknown = {r[1] for r in rows} - set(self.mine)
        if unknown:
            seen = await database_sync_to_async(selectors.visible_ids)(unknown, self.who)
            self.mine.update({t: t in seen for t in unknown})
        return [r for r in rows if self.mine[r[1]]]

    async def _deliver(self, rows: list[fanout.Row]) -> None:
        changes: dict[tuple[str, int], list[dict]] = {}  # one change = one task version
        texts: dict[tuple[str, int], list[str]] = {}  # its events as the Tailer encoded them
        last_id: dict[tuple[str, int], int] = {}
        for row_id, task_id, version, _, event, text in await self._visible(rows):
            changes.setdefault((task_id, version), []).append(event)
            texts.setdefault((task_id, version), []).append(text)
            last_id[task_id, version] = row_id
        sent_all = True
        outgoing: list[tuple[str, str | None, str]] = []  # (text, type, task id), in order
        for (task_id, version), events in changes.items():
            known = self.versions.get(task_id)
            if known is not None and version <= known:
                continue  # already in the snapshot, or sent
            if known is None and self.truncated and last_id[task_id, version] <= self.decided:
                # committed before the snapshot was read, which cut this task: the reader
                # (fanout.Tailer) may hand it over late, under load, and it is not "new"
                continue
            if known is None and _touches(task_id, events, "add"):
                expected = version  # enters the view now: the add carries the whole entry
            elif known is None:
                if _touches(task_id, events, "remove"):
                    continue  # not held, and gone
                if self.truncated:
                    # cut from this socket's window: it joins when it needs a person now
                    if self._must_hold(_status_after(task_id, events)):
                        sent_all &= await self._send_merged(outgoing)  # in order
                        outgoing = []
                        sent_all &= await self._join(task_id)
                    continue
                expected = 1  # new, but its first change committed late: it is in the log
            else:
                expected = known + 1
            if version > expected:  # a change committed late: fetch what lies between
                gap = await database_sync_to_async(_missing)(task_id, expected - 1, version)
                outgoing += [(missing[5], missing[3], task_id) for missing in gap]
            for text, event in zip(texts[task_id, version], events, strict=True):
                outgoing.append((text, event.get("type"), task_id))
            if _touches(task_id, events, "remove"):
                self.versions.pop(task_id, None)  # left the view: nothing more will come
            else:
                self.versions[task_id] = version
        sent_all &= await self._send_merged(outgoing)
        if not sent_all:
            await self.resync()

    async def _send_merged(self, outgoing: list[tuple[str, str | None, str]]) -> bool:
        """Send a batch's events with its STATE_DELTAs merged: at fleet load one pass
        projects hundreds of tasks' changes, and a frame each cost every socket's client
        (and this loop) hundreds of messages a second. A merged STATE_DELTA holds at most
        one change per task (a client's gap check expects each delta to move a task by one
        version: static/js/live.js), so a task's second change starts the next one. The
        other events (ACTIVITY_*) of the merged tasks go just before it, in their order:
        each task's events keep their order (the projector writes a change's activities
        before its STATE_DELTA, so a card's content is there when the state names it);
        only events of different tasks may swap, and those are independent."""
        sent_all = True
        run: list[str] = []
        first: list[tuple[str, str | None]] = []
        tasks: set[str] = set()
        size = 0

        async def flush() -> bool:
            nonlocal size
            ok = True
            for text, kind in first:
                ok &= await self._send_text(text, kind)
            if run:
                text = run[0] if len(run) == 1 else merged_deltas(tuple(run))
                ok &= await self._send_text(text, "STATE_DELTA")
            run.clear()
            first.clear()
            tasks.clear()
            size = 0
            return ok

        for text, kind, task_id in outgoing:
            if task_id in tasks or size + len(text) > MERGED_DELTA_BYTES:
                sent_all &= await flush()  # after the task's delta in this frame: next frame
            if kind == "STATE_DELTA":
                run.append(text)
                tasks.add(task_id)
                size += len(text)
            else:
                first.append((text, kind))
        sent_all &= await flush()
        return sent_all

    async def _send(self, event: dict[str, Any]) -> bool:
        """Send one event, unless it is over the server's message limit: sending it would
        close the socket (1011). Returns whether it went; the caller resyncs if not."""
        return await self._send_text(json.dumps(event, separators=(",", ":")), event.get("type"))

    async def _send_text(self, text: str, kind: str | None) -> bool:
        """`_send` for an event already encoded (the Tailer's rows: fanout.encoded)."""
        if len(text) > view.SOCKET_MESSAGE_BYTES:  # ASCII-escaped: characters are bytes
            log.warning("AG-UI %s of %d bytes not sent: over the limit", kind, len(text))
            return False
        await self.send(text)
        return True
