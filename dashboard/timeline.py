"""A task's story for the detail page: messages, state changes, pauses and resumes with
their causes, input requests and decisions, artifacts and progress, in the order they
happened. Built from TaskEvent (the spine) joined in memory with Message, Suspension,
Interrupt and Artifact rows: six queries whatever the history's length
(docs/design/house-rules.md, D6)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from a2a.endings import Ending, ending_of
from a2a.event_kinds import ENDING_KINDS, EventKind, keeps_idle
from a2a.models import Artifact, Message, Suspension, Task, TaskEvent
from agui.models import Interrupt

TEXT_CHARS = 4000  # an entry's text on the page; past it a marker and a link to the whole
DETAIL_CHARS = 500  # one detail's value (a reject comment, a resume input) on the page
CAUSES = {
    "explicit_resume": "resumed by hand",
    "condition_fired": "a trigger condition matched",
    "timeout": "the deadline passed",
    "external_event": "the awaited event arrived",
}
STATE_EVENTS = {
    EventKind.CREATED: "Created",
    EventKind.STARTED: "Started",
    EventKind.COMPLETED: "Completed",
    EventKind.FAILED: "Failed",
    EventKind.REJECTED: "Rejected",
    EventKind.CANCELED: "Canceled",
    EventKind.TIMED_OUT: "Timed out",
}


@dataclass
class Entry:
    at: datetime
    kind: str  # css hook: message, state, pause, resume, request, decision, artifact,
    # progress, retry
    title: str
    actor: str = ""
    text: str = ""  # agent/user text, shown escaped and pre-wrapped
    details: list[tuple[str, str]] = field(default_factory=list)
    state: str = ""  # the state the task was left in, when it changed
    count: int = 1  # events folded into this entry (a run of output)
    tally: dict[str, int] = field(default_factory=dict)  # artifact name -> updates
    ref: int = 0  # the event's id: the link to the entry's whole text
    cut: int = 0  # characters in the whole entry when the page shows it cut (0: all shown)


@dataclass
class Detail:
    task: Task
    entries: list[Entry]
    messages: list[Message]
    suspensions: list[Suspension]
    artifacts: list[Artifact]
    interrupts: list[Interrupt]
    title: str
    # "rejected" when the task completed after its last input request was rejected (an
    # agent that stands down ends `completed`): the page says so beside the state
    outcome: str = ""
    # when a task resumed to work has waited for a worker to take its run since (None once
    # one did: its `picked_up`); the board says the same from the live view
    waiting_since: datetime | None = None
    # how it ended (who cancelled and why, which deadline, the agent's error: a2a.endings),
    # shown before the agent's last words; None while it runs or for a plain completion
    ending: Ending | None = None
    # when a hosted ACP agent's session last ended a turn with nothing waiting (its
    # `turn_ended`), while no event came since and the task is working: it is idle, waiting
    # for the next message; the board says the same from the live view (`idleSince`)
    idle_since: datetime | None = None


OUTPUT = ("progress", "artifact")

# The timeline's filters (issue 15): what each entry kind counts as. Output (progress,
# artifacts) shows under "All" only.
GROUPS = {
    "message": "messages",
    "state": "states", "pause": "states", "resume": "states", "retry": "states",
    "request": "decisions", "decision": "decisions",
}  # fmt: skip
FILTERS = [("all", "All"), ("messages", "Messages"), ("states", "State changes"),
           ("decisions", "Decisions")]  # fmt: skip


HOST_NOTES = {
    "exited": "The agent's process exited",
    "turn_lost": "A turn was cut off",
    "takeover": "Another supervisor took the session over",
    "refused": "Refused an agent's request",
    "stalled": "The agent stopped answering",
    "output_limit": "The agent wrote too much",
    "garbage": "The agent wrote lines that are not ACP",
    "new_session": "Started a new session of the agent",
    "cancelled_turn": "The turn was cancelled (its work is lost)",
    "asked_again": "Asked the agent's question again",
    "idle_stopped": "Stopped the idle agent's process (the next message starts it again)",
    "woken": "Started the agent again for the next message",
    "remembered": "Answered a permission request from the session's memory",
}


def _merge(run: Entry, entry: Entry, ev: TaskEvent) -> Entry:
    """Progress reports and artifact updates in a row become one "output" entry: the
    latest progress and how often each artifact changed."""
    run.count += 1
    run.at = entry.at
    updates = dict(run.details)
    if entry.kind == EventKind.PROGRESS:
        updates["progress"] = entry.details[0][1]
    else:
        name = entry.title.removeprefix("Artifact ").removesuffix(" extended")
        run.tally[name] = run.tally.get(name, 0) + 1
        updates["artifacts"] = ", ".join(
            f"{n} ({k} update{'s' if k > 1 else ''})" for n, k in run.tally.items()
        )
    run.details = sorted(updates.items())  # "artifacts" before "progress", always
    titles = []
    if "progress" in updates:
        titles.append(f"Progress {updates['progress']}")
    if "artifacts" in updates:
        titles.append("artifacts updated")
    run.title = ", ".join(titles)
    return run


def text_of(parts: list[dict[str, Any]] | None) -> str:
    return "\n".join(p.get("text", "") for p in parts or [] if p.get("kind") == "text").strip()


def _data_summary(parts: list[dict[str, Any]] | None) -> str:
    out = []
    for p in parts or []:
        if p.get("kind") == "data":
            data = p.get("data")
            kind = data.get("type") if isinstance(data, dict) else None
            if kind not in ("a2a.input.request", "a2a.input.response"):
                out.append(cut_text(str(data), 200))
        elif p.get("kind") == "file":
            f = p.get("file") or {}
            out.append(f"file {f.get('name') or f.get('uri') or ''}".strip())
    return "; ".join(out)


def _values(values: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for name, value in (values or {}).items():
        if isinstance(value, dict) and "decision" in value:
            text = value["decision"] + (f" — “{value['comment']}”" if value.get("comment") else "")
        else:
            text = str(value)
        out.append((name, text))
    return out


def _conditions(conditions: dict[str, Any] | None) -> list[tuple[str, str]]:
    c = conditions or {}
    out = []
    if c.get("onEvent"):
        out.append(("waits for event", c["onEvent"]))
    if c.get("trigger"):
        t = c["trigger"]
        match = ", ".join(f"{k}={v}" for k, v in (t.get("match") or {}).items())
        out.append(("trigger", f"{t.get('event')}" + (f" where {match}" if match else "")))
    if c.get("timeout"):
        t = c["timeout"]
        then = on_timeout_text(t.get("onTimeout"))
        out.append(("timeout", f"{t.get('durationMinutes')} min, then {then}"))
    return out


def on_timeout_text(value: str | None) -> str:
    return {
        "fail": "fails",
        "resume_with_summary": "resumes with a summary",
        "resume_with_input": "resumes with preset input",
    }.get(value or "", "nothing happens")


def build(task_id: str, *, whole: bool = False) -> Detail:
    task = Task.objects.select_related("current_suspension", "status_message").get(pk=task_id)
    events = list(TaskEvent.objects.filter(task_id=task_id).order_by("id"))
    messages = list(Message.objects.filter(task_id=task_id).order_by("seq"))
    suspensions = list(Suspension.objects.filter(task_id=task_id).order_by("suspended_at", "id"))
    artifacts = list(Artifact.objects.filter(task_id=task_id).order_by("seq"))
    interrupts = list(Interrupt.objects.filter(task_id=task_id).order_by("created_at"))
    by_seq = {m.seq: m for m in messages}
    by_handle = {s.handle: s for s in suspensions}
    by_artifact = {a.artifact_id: a for a in artifacts}
    requests = {i.request_id: i for i in interrupts if i.kind == Interrupt.Kind.INPUT_REQUEST}

    entries: list[Entry] = []
    decision = ""
    waiting_since = idle_since = None
    answered = ended = None
    for ev in events:
        if ev.kind == EventKind.TURN_ENDED:
            idle_since = ev.created_at
        elif not keeps_idle(ev.kind, ev.data):
            idle_since = None
        if ev.kind == EventKind.INPUT_PROVIDED:
            decision = (ev.data or {}).get("decision") or ""
            answered = ev
        elif ev.kind in ENDING_KINDS:
            ended = ev
        if ev.kind == EventKind.RESUMED:
            waiting_since = ev.created_at if ev.to_state == "working" else None
        elif ev.kind == EventKind.PICKED_UP:
            waiting_since = None
        entry = entry_of(ev, by_seq, by_handle, by_artifact, requests, whole=whole)
        if entry is None:
            continue
        last = entries[-1] if entries else None
        if entry.kind in OUTPUT and last is not None and last.kind == "output":
            _merge(last, entry, ev)
            continue
        if entry.kind in OUTPUT:
            entry = _merge(
                Entry(at=ev.created_at, kind="output", title="Output", count=0), entry, ev
            )
            entry.actor = ev.actor
        entries.append(entry)
    first = messages[0] if messages else None
    return Detail(
        task=task,
        entries=entries,
        messages=messages,
        suspensions=suspensions,
        artifacts=artifacts,
        interrupts=interrupts,
        title=text_of(first.parts if first else None)[:200],
        outcome="rejected" if task.state == "completed" and decision == "rejected" else "",
        waiting_since=waiting_since if task.state == "working" else None,
        ending=ending_of(ended, answered) if ended is not None else None,
        idle_since=idle_since if task.state == "working" else None,
    )


@dataclass(frozen=True)
class Refs:
    """What events point at, read once for a whole timeline (or an inbox's requests):
    messages by seq, suspensions by handle, artifacts by id, input requests by id. A
    missing one makes a plainer entry, never an error."""

    by_seq: dict[int, Message]
    by_handle: dict[str, Suspension]
    by_artifact: dict[str, Artifact]
    requests: dict[str, Interrupt]

    def message(self, data: dict[str, Any]) -> Message | None:
        return self.by_seq.get(data.get("messageSeq"))


def cut_text(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters at a word boundary (not mid-word, issue
    29), with an ellipsis; the caller says how long the whole is and links to it."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", limit - 200)
    return (head[:space] if space > 0 else head).rstrip() + " …"


def _cut(entry: Entry) -> Entry:
    """The entry as the page shows it: long text and long details cut, and `cut` set to
    the whole entry's length so the page says so and links to all of it."""
    details = [(k, str(v)) for k, v in entry.details]
    whole = len(entry.text) + sum(len(v) for _, v in details)
    cut = len(entry.text) > TEXT_CHARS or any(len(v) > DETAIL_CHARS for _, v in details)
    if cut:
        entry.text = cut_text(entry.text, TEXT_CHARS)
        entry.details = [(k, cut_text(v, DETAIL_CHARS)) for k, v in details]
        entry.cut = whole
    return entry


def entry_of(
    ev: TaskEvent, by_seq, by_handle, by_artifact, requests, *, whole: bool = False
) -> Entry | None:
    """One event as a timeline entry (None: not shown), by its kind's line of ENTRIES, cut
    for the page unless `whole`. The maps name what events point at (Refs); the inbox
    passes only some."""
    changed = ev.from_state != ev.to_state
    base = {"at": ev.created_at, "actor": ev.actor, "state": ev.to_state if changed else ""}
    refs = Refs(by_seq, by_handle, by_artifact, requests)
    entry = ENTRIES.get(ev.kind, _other)(ev, ev.data or {}, base, refs)
    if entry is None:
        return None
    entry.ref = ev.id
    return entry if whole else _cut(entry)


def _message(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    msg = refs.message(data)
    role = data.get("role", "user")
    text = text_of(msg.parts if msg else None)
    extra = _data_summary(msg.parts if msg else None)
    return Entry(
        kind="message",
        title="Agent said" if role == "agent" else "User message",
        text=text or extra,
        **base,
    )


def _state(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    msg = refs.message(data)
    text = text_of(msg.parts if msg else None)
    details = [("reason", ev.reason)] if ev.reason and ev.reason != text else []
    if ev.kind == EventKind.CANCELED and data.get("withdrawnRequestId"):
        details.append(("withdrew request", data["withdrawnRequestId"]))
    title = STATE_EVENTS[ev.kind]
    return Entry(kind="state", title=title, text=text, details=details, **base)


def _pause(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    s = refs.by_handle.get(data.get("handle"))
    who = "Paused by the agent (parked)" if ev.kind == EventKind.PARKED else "Paused"
    details = [("reason", ev.reason or "—")]
    if s is not None:
        if s.mode:
            details.append(("mode", s.mode.replace("_", " ")))
        details += _conditions(s.conditions)
        if s.summary:
            details.append(("summary", s.summary))
        ended = s.ending or "still paused"
        if s.ended_at:
            ended += f" by {s.ended_by}"
        details.append(("ended", ended))
    if data.get("supersedes"):
        details.append(("holds", "the agent's own wait (its conditions stop firing)"))
    return Entry(kind="pause", title=who, details=details, **base)


def _resume(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    details = [("cause", CAUSES.get(data.get("cause"), data.get("cause") or ""))]
    s = refs.by_handle.get(data.get("handle"))
    if data.get("hadResumeInput") and s is not None:
        details.append(("input", str(s.resume_input)))
    if data.get("continueTranscript") is False:
        details.append(("transcript", "fresh turn (digest)"))
    if ev.reason:
        details.append(("note", ev.reason))
    return Entry(kind="resume", title="Resumed", details=details, **base)


def _request(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    i = refs.requests.get(data.get("requestId"))
    request = (i.content.get("request") if i else None) or {}
    fields = ", ".join(
        f"{f.get('label') or f.get('name')} ({f.get('type')})" for f in request.get("fields") or []
    )
    details = [("asks for", fields)] if fields else []
    if data.get("withdrawnRequestId"):  # asked again: its asker was gone
        details.append(("asked again, withdrawing", data["withdrawnRequestId"]))
    return Entry(
        kind="request",
        title=f"Asked: {request.get('title') or 'input'}",
        text=ev.reason,
        details=details,
        **base,
    )


def _decision(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    decision = data.get("decision") or "provided"
    title = {"approved": "Approved", "rejected": "Rejected"}.get(decision, "Answered")
    return Entry(kind="decision", title=title, details=_values(data.get("values")), **base)


def _progress(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    return Entry(
        kind=EventKind.PROGRESS,
        title="Progress",
        details=[("progress", f"{data.get('done')} of {data.get('total')}")],
        **base,
    )


def _artifact(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    a = refs.by_artifact.get(data.get("artifactId"))
    name = (a.name if a else "") or data.get("artifactId", "")
    title = f"Artifact {name}" + (" extended" if data.get("append") else "")
    parts = len(a.parts) if a else 0
    return Entry(kind="artifact", title=title, details=[("parts", str(parts))], **base)


def _retry(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """The infrastructure failed, not the agent: the run goes on after a backoff."""
    return Entry(
        kind="retry",
        title="Retrying after an infrastructure fault",
        details=[
            ("fault", ev.reason),
            ("attempt", str(data.get("attempt", ""))),
            ("next try", str(data.get("retryAt", ""))),
        ],
        **base,
    )


def _tool(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """A hosted ACP agent's tool call."""
    details = [("status", (data.get("status") or "").replace("_", " ") or "—")]
    if data.get("kind"):
        details.append(("kind", data["kind"]))
    if data.get("content"):
        details.append(("output", data["content"]))
    title = data.get("title") or data.get("toolCallId") or "tool"
    return Entry(kind="tool", title=f"Tool: {title}", details=details, **base)


def _host_note(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """What the host saw happen to the agent's process."""
    title = HOST_NOTES.get(data.get("what"), "Host note")
    return Entry(kind="retry", title=title, text=data.get("detail", ""), **base)


def _turn_ended(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """A hosted agent's turn ended: its session waits for the next message."""
    return Entry(kind="state", title="Turn ended: waiting for the next message", **base)


def _picked_up(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """The end of "resumed, waiting for a worker"."""
    return Entry(kind="resume", title="A worker took the run again", **base)


def _other(ev: TaskEvent, data: dict[str, Any], base: dict[str, Any], refs: Refs) -> Entry:
    """A kind this code does not know (a row from a newer version): shown as its name."""
    return Entry(kind="state", title=ev.kind.replace("_", " ").capitalize(), text=ev.reason, **base)


# An event (with its data, the fields every entry has, and what it points at) as an entry
Shows = Callable[[TaskEvent, dict[str, Any], dict[str, Any], Refs], Entry | None]
# How each kind of event shows on the timeline; every kind has its line
# (tests/test_kinds_handled.py).
ENTRIES: dict[EventKind, Shows] = {
    EventKind.CREATED: _state,
    EventKind.STARTED: _state,
    EventKind.MESSAGE_ADDED: _message,
    EventKind.PROGRESS: _progress,
    EventKind.ARTIFACT_ADDED: _artifact,
    EventKind.INPUT_REQUESTED: _request,
    EventKind.INPUT_PROVIDED: _decision,
    EventKind.PAUSED: _pause,
    EventKind.PARKED: _pause,
    EventKind.RESUMED: _resume,
    EventKind.TIMED_OUT: _state,
    EventKind.RETRYING: _retry,
    EventKind.PICKED_UP: _picked_up,
    EventKind.TOOL_CALL: _tool,
    EventKind.HOST_NOTE: _host_note,
    EventKind.TURN_ENDED: _turn_ended,
    EventKind.COMPLETED: _state,
    EventKind.FAILED: _state,
    EventKind.REJECTED: _state,
    EventKind.CANCELED: _state,
}
