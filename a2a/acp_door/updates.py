"""A session's TaskEvent log as ACP `session/update`s.

One pure function of the log decides what a client sees, live or on `session/load`, so a
replay is the same every time and the same as what was first seen (live sessions add only
what a client must not see twice: permission requests and forms, which are questions,
not history). Standard kinds only, unless the client opted in to the seed's
`suspended` / `resumed` kinds (docs/design/acp-door.md, D65): a standard client gets the same
facts as an `agent_message_chunk` line and `session_info_update._meta`, never an
unknown kind.

Mapping (UPDATES, one line per kind; tool call ids are stable: `task-<taskId>`,
`artifact-<eventId>`): created → tool_call (pending) · started → tool_call_update
in_progress · agent text → agent_message_chunk · progress → tool_call_update (content
"n of m", rawOutput; and a hosted agent's plan → plan) · a hosted agent's tool call →
its tool_call / tool_call_update (`tool-<taskId>-<its id>`) · artifact → a completed
tool_call holding its parts · input request → agent_message_chunk with the question ·
paused/parked → suspended (or its fallback) · resumed → resumed (or its fallback) ·
completed/failed/rejected/canceled/timed out → the final text and tool_call_update
completed/failed · retrying, picked up, host notes → nothing. User messages (and
answers) appear only in a replay, as user_message_chunk: live, the client sent them
itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from a2a.acp_door.commands import paused_by, way_out
from a2a.event_kinds import EventKind, is_agent_text, is_user_message
from a2a.formats import text_of, ts
from a2a.input_requests import REQUEST_TYPE, find_data_part
from a2a.lifecycle import State
from a2a.models import Artifact, Message, Task, TaskEvent

SUSPEND_META = "taskdeck/suspend"  # the seed's _meta key (docs/design/acp-door.md, D63)
TASK_META = "taskdeck"
ARTIFACT_TEXT_CHARS = 4000


@dataclass(frozen=True)
class Fact:
    """One TaskEvent with what rendering it needs (its task, message, artifact)."""

    event: TaskEvent
    task: Task
    message: Message | None
    artifact: Artifact | None

    @property
    def kind(self) -> str:
        return self.event.kind

    @property
    def data(self) -> dict[str, Any]:
        return self.event.data or {}


def read_facts(
    context_id: str,
    cursors: dict[str, int],
    floor: int = 0,
    *,
    owner: str,
    limit: int = 500,
) -> list[Fact]:
    """The context's events not yet seen, in id order, with their rows (four queries).

    `cursors` holds, per task, the last event id seen; a task not in it contributes every
    event above `floor`. Per-task cursors are exact: one task's events are appended under
    its row lock, so their ids grow in commit order (across tasks they need not).

    Only the tasks of `owner` (the session's tenant): a context is its tenant's
    (a2a/services/contexts.py), and a task of another tenant that got into it before
    that was enforced is never replayed to this one."""
    unseen = Q(task__context_id=context_id, task__owner=owner, id__gt=floor) & ~Q(
        task_id__in=list(cursors)
    )
    for task_id, cursor in cursors.items():
        unseen |= Q(task_id=task_id, id__gt=cursor)
    events = list(TaskEvent.objects.filter(unseen).order_by("id")[:limit])
    if not events:
        return []
    task_ids = {e.task_id for e in events}
    tasks = {t.id: t for t in Task.objects.filter(pk__in=task_ids)}
    wanted = {(e.task_id, e.data.get("messageSeq")) for e in events if e.data.get("messageSeq")}
    messages = {
        (m.task_id, m.seq): m
        for m in Message.objects.filter(task_id__in=task_ids, seq__in={s for _, s in wanted})
        if (m.task_id, m.seq) in wanted
    }
    artifact_keys = {
        (e.task_id, e.data.get("artifactId")) for e in events if e.kind == EventKind.ARTIFACT_ADDED
    }
    artifacts = {
        (a.task_id, a.artifact_id): a
        for a in Artifact.objects.filter(
            task_id__in=task_ids, artifact_id__in={aid for _, aid in artifact_keys}
        )
    }
    # Each statement reads what has committed when it runs: a task deleted after the events
    # were read (its events go with it) is skipped, not a KeyError that ends the follower.
    return [
        Fact(
            event=e,
            task=tasks[e.task_id],
            message=messages.get((e.task_id, e.data.get("messageSeq"))),
            artifact=artifacts.get((e.task_id, e.data.get("artifactId"))),
        )
        for e in events
        if e.task_id in tasks
    ]


def _chunk(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        out["messageId"] = message_id
    return out


def _say(text: str, fact: Fact | None = None, n: int = 0) -> dict[str, Any]:
    """One whole agent message: its own `messageId` (`msg-<eventId>[-n]`, stable across
    replays) so an editor starts a new message, and a closing line break, because a
    client that ignores messageId (acpx 0.19) writes chunks back to back and would glue
    "…rejected (no comment).Plan rejected: …" (docs/acp.md, "What an editor sees")."""
    text = text if text.endswith("\n") else text + "\n"
    mid = None if fact is None else f"msg-{fact.event.pk}" + (f"-{n}" if n else "")
    return _chunk("agent_message_chunk", text, mid)


def _task_call(task: Task) -> str:
    return f"task-{task.id}"


def _tool_update(task: Task, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _task_call(task),
        "status": status,
        **extra,
    }


def _text_content(text: str) -> list[dict[str, Any]]:
    return [{"type": "content", "content": {"type": "text", "text": text}}]


def question_text(request: dict[str, Any], explanation: str) -> str:
    """An input request as text: what is asked and how to answer by typing."""
    lines = [explanation or request.get("title") or "Input required"]
    if request.get("title") and request.get("title") != explanation:
        lines.insert(0, f"**{request['title']}**")
    if request.get("description"):
        lines.append(request["description"])
    fields = request.get("fields") or []
    for f in fields:
        label = f.get("label") or f["name"]
        kind = f["type"]
        if kind == "enum":
            kind = "one of: " + ", ".join(map(str, f.get("options") or []))
        elif kind == "approval":
            kind = "approve or reject"
        need = "required" if f.get("required") else "optional"
        lines.append(f"- {label} ({kind}, {need})")
    if len(fields) == 1 and fields[0]["type"] == "approval":
        lines.append('Reply "approve" or "reject", optionally with a comment: "approve: ship it".')
    elif len(fields) == 1:
        lines.append("Reply with the value.")
    elif fields:
        names = ", ".join(f'"{f["name"]}": …' for f in fields)
        lines.append(f"Reply with a JSON object: {{{names}}}.")
    return "\n".join(lines)


def request_of(fact: Fact) -> dict[str, Any]:
    """The input request an `input_requested` event opened (from its status message)."""
    if fact.message is None:
        return {"requestId": fact.data.get("requestId")}
    return find_data_part(fact.message.parts, REQUEST_TYPE) or {}


def _artifact_text(fact: Fact, *, start: int | None = None, upto: int | None = None) -> str:
    """The parts this event added (default), or `start`..`upto` of the artifact (an
    append's card shows the artifact so far: a tool_call_update's content replaces)."""
    a = fact.artifact
    if a is None:
        return ""
    if start is None:
        start = fact.data.get("partsFrom", 0)
        upto = start + fact.data.get("partsCount", len(a.parts) - start)
    parts = a.parts[start:upto]
    out = []
    for p in parts:
        if p.get("kind") == "text":
            out.append(p.get("text", ""))
        elif p.get("kind") == "data":
            out.append(json.dumps(p.get("data"), sort_keys=True, separators=(", ", ": ")))
        elif p.get("kind") == "file":
            f = p.get("file") or {}
            out.append(f"file {f.get('name') or f.get('uri') or ''}".strip())
    text = "\n".join(out)
    return text if len(text) <= ARTIFACT_TEXT_CHARS else text[:ARTIFACT_TEXT_CHARS] + " …"


def suspension_facts(fact: Fact) -> dict[str, Any]:
    """The seed's `suspended` fields for a paused/parked event."""
    data = fact.data
    out: dict[str, Any] = {
        "handle": data.get("handle"),
        "reason": fact.event.reason,
        "initiator": data.get("initiator"),
        "suspendedAt": ts(fact.event.created_at),
    }
    if data.get("conditions"):
        out["resumeWhen"] = data["conditions"]
    return out


def resumption_facts(fact: Fact) -> dict[str, Any]:
    data = fact.data
    return {
        "handle": data.get("handle"),
        "cause": data.get("cause"),
        "hadResumeInput": bool(data.get("hadResumeInput")),
        "continueTranscript": data.get("continueTranscript", True) is not False,
        "resumedAt": ts(fact.event.created_at),
    }


def _task_meta(fact: Fact, **extra: Any) -> dict[str, Any]:
    return {TASK_META: {"taskId": fact.task.id, "state": fact.event.to_state, **extra}}


def render(fact: Fact, *, replay: bool, opted_in: bool) -> list[dict[str, Any]]:
    """The `update` objects (the value of `params.update`) one event becomes: in a replay
    what the user said first, then what its kind's line of UPDATES makes of it."""
    out = _user_said(fact) if replay and is_user_message(fact.kind, fact.data) else []
    out += UPDATES.get(fact.kind, _nothing)(fact, opted_in)
    return out


def _user_said(fact: Fact) -> list[dict[str, Any]]:
    """A client's message (or answer) as a replay shows it: live, the client sent it."""
    if fact.kind == EventKind.INPUT_PROVIDED:
        data = fact.data
        said = text_of(fact.message.parts) if fact.message else ""
        shown = said or json.dumps(data.get("values") or {}, sort_keys=True)
        said = f"{data.get('decision', 'provided')}: {shown}"
        return [_chunk("user_message_chunk", said, f"user-{fact.event.pk}")]
    if fact.message is not None and text_of(fact.message.parts):
        return [_chunk("user_message_chunk", text_of(fact.message.parts), f"user-{fact.event.pk}")]
    return []


def _created(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    task = fact.task
    return [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": _task_call(task),
            "title": f"Taskdeck task ({task.skill})",
            "kind": "other",
            "status": "pending",
            "rawInput": {"taskId": task.id, "skill": task.skill},
            "_meta": _task_meta(fact),
        },
        # the editor's session title: what the latest task is (a standard kind)
        {"sessionUpdate": "session_info_update", "title": f"Taskdeck: {task.skill}"},
    ]


def _started(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    return [_tool_update(fact.task, "in_progress")]


def _agent_said(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    """Agent text (a user's message shows only in a replay: `_user_said`)."""
    said = fact.message is not None and is_agent_text(fact.kind, fact.data)
    text = text_of(fact.message.parts) if said else ""
    return [_say(text, fact)] if text else []


PLAN_STEPS = 20  # more steps than this are one plan entry "n of m"


def _plan(done: Any, total: Any, *, finished: bool = False) -> dict[str, Any]:
    """Progress as the editor's plan: one entry per step (done, current, to do), or one
    entry "n of m" when there are more than PLAN_STEPS steps or no count."""

    def entry(content: str, status: str) -> dict[str, Any]:
        return {"content": content, "priority": "medium", "status": status}

    if not (isinstance(done, int) and isinstance(total, int)) or not 0 < total <= PLAN_STEPS:
        status = "completed" if finished else "in_progress"
        return {"sessionUpdate": "plan", "entries": [entry(f"{done} of {total}", status)]}
    entries = [
        entry(
            f"Step {i} of {total}",
            "completed" if finished or i <= done else "in_progress" if i == done + 1 else "pending",
        )
        for i in range(1, total + 1)
    ]
    return {"sessionUpdate": "plan", "entries": entries}


def _progress(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    done, total = fact.data.get("done"), fact.data.get("total")
    out = [
        _tool_update(
            fact.task,
            "in_progress",
            content=_text_content(f"{done} of {total}"),
            rawOutput={"progress": {"done": done, "total": total}},
        ),
    ]
    if fact.data.get("plan"):  # a hosted ACP agent's plan: passed on as it sent it
        out.insert(0, {"sessionUpdate": "plan", "entries": fact.data["plan"]})
    else:  # else the steps as the editor's plan
        out.insert(0, _plan(done, total))
    return out


def _tool_call(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    """A hosted ACP agent's tool call (its `tool_call`, or `update`: its
    `tool_call_update`), passed on under an id of its task: a session may hold several
    tasks, each agent numbering its calls its own way."""
    data = fact.data
    update: dict[str, Any] = {"toolCallId": f"tool-{fact.task.id}-{data.get('toolCallId')}"}
    if data.get("update"):
        update["sessionUpdate"] = "tool_call_update"
        update.update({k: data[k] for k in ("title", "kind", "status") if data.get(k)})
    else:
        update.update(
            sessionUpdate="tool_call",
            title=data.get("title") or "Tool call",
            kind=data.get("kind") or "other",
            status=data.get("status") or "pending",
        )
    if data.get("content"):
        update["content"] = _text_content(data["content"])
    return [update]


def _artifact(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    """One card per artifact: its first part opens it (`tool_call`), each append updates
    the same card (`tool_call_update`, same toolCallId) with the artifact as it stands
    after that append, so a 20-item batch is one card, not twenty."""
    data = fact.data
    name = fact.artifact.name if fact.artifact else data.get("artifactId")
    raw = {"artifactId": data.get("artifactId"), "taskId": fact.task.id}
    call = f"artifact-{fact.task.id}-{data.get('artifactId')}"
    if data.get("append"):
        so_far = data.get("partsFrom", 0) + data.get("partsCount", 0)
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "status": "completed",
                "content": _text_content(_artifact_text(fact, start=0, upto=so_far or None)),
                "rawOutput": {**raw, "parts": so_far or None},
            }
        ]
    return [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call,
            "title": f"Artifact {name}",
            "kind": "other",
            "status": "completed",
            "content": _text_content(_artifact_text(fact)),
            "rawOutput": raw,
        }
    ]


def _asked(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    explanation = text_of(fact.message.parts) if fact.message else fact.event.reason
    return [_say(question_text(request_of(fact), explanation), fact)]


def _suspended(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    facts = suspension_facts(fact)
    data = fact.data
    meta = _task_meta(fact, mode=data.get("mode") or None, deadline=data.get("deadline"))
    meta[TASK_META]["pausedBy"] = fact.event.actor
    if opted_in:
        return [{"sessionUpdate": "suspended", **facts, "_meta": meta}]
    # who paused, in words (an operator's hold is not "the client"'s), and the way out
    who = paused_by(fact.event.actor, facts["initiator"])
    out = way_out(State.PAUSED_BY_CLIENT, parked=fact.kind == EventKind.PARKED)
    return [
        _say(
            f"⏸ Suspended by {who}: {facts['reason'] or 'no reason given'} "
            f"(handle {facts['handle']}, by {fact.event.actor}); {out}.",
            fact,
        ),
        {
            "sessionUpdate": "session_info_update",
            "_meta": {SUSPEND_META: {"state": "suspended", **facts}, **meta},
        },
    ]


def _resumed(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    facts = resumption_facts(fact)
    if opted_in:
        return [{"sessionUpdate": "resumed", **facts, "_meta": _task_meta(fact)}]
    return [
        _say(f"▶ Resumed ({facts['cause']})", fact),
        {
            "sessionUpdate": "session_info_update",
            "_meta": {SUSPEND_META: {"state": "resumed", **facts}, **_task_meta(fact)},
        },
    ]


def _completed(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    out = []
    if fact.message is not None and (text := text_of(fact.message.parts)):
        out.append(_say(text, fact))
    if progress := fact.task.progress:  # a completed task's progress no longer changes
        out.append(_plan(progress.get("done"), progress.get("total"), finished=True))
    out.append(_tool_update(fact.task, "completed"))
    return out


ENDED_BADLY = {
    EventKind.FAILED: "Failed",
    EventKind.REJECTED: "Rejected",
    EventKind.CANCELED: "Canceled",
    EventKind.TIMED_OUT: "Timed out",
}


def _ended_badly(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    """Failed, rejected, canceled or timed out: the reason, and the task's call failed."""
    word = ENDED_BADLY[fact.kind]
    return [
        _say(f"{word}: {fact.event.reason or 'no reason given'}", fact),
        _tool_update(fact.task, "failed"),
    ]


def _nothing(fact: Fact, opted_in: bool) -> list[dict[str, Any]]:
    """Not shown to an ACP client (the dashboard's timeline has it)."""
    return []


# What each kind of event becomes for an ACP client; every kind has its line, "nothing"
# included (tests/test_kinds_handled.py).
Renders = Callable[[Fact, bool], list[dict[str, Any]]]
UPDATES: dict[EventKind, Renders] = {
    EventKind.CREATED: _created,
    EventKind.STARTED: _started,
    EventKind.MESSAGE_ADDED: _agent_said,
    EventKind.PROGRESS: _progress,
    EventKind.ARTIFACT_ADDED: _artifact,
    EventKind.INPUT_REQUESTED: _asked,
    EventKind.INPUT_PROVIDED: _nothing,  # an answer: shown by `_user_said` in a replay
    EventKind.PAUSED: _suspended,
    EventKind.PARKED: _suspended,
    EventKind.RESUMED: _resumed,
    EventKind.TIMED_OUT: _ended_badly,
    EventKind.RETRYING: _nothing,
    EventKind.PICKED_UP: _nothing,
    EventKind.TURN_ENDED: _nothing,
    EventKind.TOOL_CALL: _tool_call,
    EventKind.HOST_NOTE: _nothing,
    EventKind.COMPLETED: _completed,
    EventKind.FAILED: _ended_badly,
    EventKind.REJECTED: _ended_badly,
    EventKind.CANCELED: _ended_badly,
}
