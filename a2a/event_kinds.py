"""The vocabulary of the TaskEvent log: every kind of event and the shape of its data.

The services write these (one per change, `a2a.services._core.record`); the projection,
the A2A streams, push delivery, the runtime's wakeups, the ACP door and the dashboard's
timeline read them. Keeping the names and shapes here means a reader never guesses what a
writer put in `data`. `EventKind` is a StrEnum: members compare equal to the stored strings.

Enforced, not only declared: the test suite checks every event's data against its kind's
shape as it is written (`check_data`, docs/runtime.md "Event shapes"), and each reader that
switches on kinds has a table with a line for every kind, tested, so a new kind fails the
suite until every reader decides what it does with it. Sets of kinds (STATUS_KINDS,
SUSPENDING_KINDS, ENDING_KINDS, USER_MESSAGE_KINDS) are named here once: readers use
them, never a list of their own.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Any, Literal, NotRequired

# typing_extensions' TypedDict: `closed` (PEP 728) and what pydantic needs on Python 3.11
from typing_extensions import TypedDict


class EventKind(StrEnum):
    CREATED = "created"  # CreatedData; from_state "" (a new task)
    STARTED = "started"  # StateData
    MESSAGE_ADDED = "message_added"  # MessageData; a user message, or agent text
    PROGRESS = "progress"  # ProgressData
    ARTIFACT_ADDED = "artifact_added"  # ArtifactData
    INPUT_REQUESTED = "input_requested"  # InputRequestedData
    INPUT_PROVIDED = "input_provided"  # InputProvidedData
    PAUSED = "paused"  # SuspensionData (initiator client; supersedes an agent's park)
    PARKED = "parked"  # SuspensionData (initiator agent) + summary
    RESUMED = "resumed"  # ResumedData
    TIMED_OUT = "timed_out"  # TimedOutData; a suspension's deadline with onTimeout fail
    RETRYING = "retrying"  # RetryingData; the run met an infrastructure fault (state unchanged)
    # NoData; a worker took the run of a task resumed to work (state unchanged): the end of
    # "resumed, waiting for a worker" (a queued task's pickup is its `started`). Not a
    # status event: A2A streams and push never carry it
    PICKED_UP = "picked_up"
    TOOL_CALL = "tool_call"  # ToolCallData; a hosted ACP agent's tool call or its update
    # HostNoteData; what the host of an ACP agent saw happen to its process (an exit, a
    # turn cut off, a takeover, a refused request): a timeline fact, never a state change
    HOST_NOTE = "host_note"
    # NoData; a hosted ACP agent's turn ended and the session waits for the next message
    # (state unchanged: `working`). Until the next event the task is idle, and the board
    # and its page say so rather than "Working". Not a status event
    TURN_ENDED = "turn_ended"
    COMPLETED = "completed"  # StateData (+ replyOnly)
    FAILED = "failed"  # StateData; the reason is TaskEvent.reason
    REJECTED = "rejected"  # StateData
    CANCELED = "canceled"  # CanceledData


# The shapes of `data`, one per kind (SHAPES). Closed (PEP 728): a key not listed is an
# error, so a shape is the whole of what its writers put in. Where only some values may
# be written, a Literal lists them; a2a.services holds the same lists (TOOL_KINDS,
# HOST_NOTES, the Suspension choices) and tests/a2a/test_event_shapes.py checks they agree.


class NoData(TypedDict, closed=True):
    """A kind whose event carries nothing beyond its row (stored as `{}`)."""


class CreatedData(TypedDict, closed=True):
    messageSeq: int  # the first user message


class StateData(TypedDict, total=False, closed=True):
    messageSeq: int  # the agent's status message, when it said something
    replyOnly: bool  # completed: the agent answered with a Message (A2A message response)


class MessageData(TypedDict, closed=True):
    messageSeq: int
    role: Literal["user", "agent"]


class RetryingData(TypedDict, closed=True):
    attempt: int  # infrastructure faults in a row, this one included
    retryAt: str  # ISO 8601: when the run is tried again
    error: str  # the fault, e.g. "OperationalError: terminating connection ..."


# ACP's ToolKind and tool call status ("" when the agent did not say)
ToolKind = Literal[
    "", "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode",
    "other",
]  # fmt: skip
ToolStatus = Literal["", "pending", "in_progress", "completed", "failed"]


class ToolCallData(TypedDict, closed=True):
    toolCallId: str
    title: str
    kind: ToolKind
    status: ToolStatus
    content: NotRequired[str]  # the text of its content blocks, shortened
    # the agent's `tool_call_update` of a call it announced before (absent: its
    # `tool_call`): the ACP door passes each on as the same kind of update
    update: NotRequired[bool]


HostNote = Literal[
    "exited", "turn_lost", "takeover", "refused", "stalled", "output_limit", "garbage",
    "new_session", "cancelled_turn", "asked_again", "idle_stopped", "woken", "remembered",
]  # fmt: skip


class HostNoteData(TypedDict, closed=True):
    what: HostNote
    detail: str


class PlanEntry(TypedDict, closed=True):
    content: str
    priority: Literal["high", "medium", "low"]
    status: Literal["pending", "in_progress", "completed"]


class ProgressData(TypedDict, closed=True):
    done: int
    total: int
    # a hosted ACP agent's `plan`, its entries as it sent them (done/total count them):
    # the ACP door passes it on as a `plan` update
    plan: NotRequired[list[PlanEntry]]


class ArtifactData(TypedDict, closed=True):
    artifactId: str
    append: bool
    partsFrom: int  # index of the first part this event added
    partsCount: int  # how many parts this event added


class InputRequestedData(TypedDict, closed=True):
    requestId: str
    number: int  # the task's n-th request (interrupt ids are input-<task>-<n>)
    messageSeq: int  # the status message holding the explanation and the request
    # asked again (services.ask_again): the open request this one replaced, withdrawn
    # unanswered (its asker is gone); an answer naming it is refused
    withdrawnRequestId: NotRequired[str]


class InputProvidedData(TypedDict, closed=True):
    requestId: str | None
    values: dict[str, Any]  # validated against the request's fields
    decision: Literal["approved", "rejected", "provided"]
    messageSeq: int


class SuspensionData(TypedDict, closed=True):
    handle: str
    initiator: Literal["client", "agent"]
    # an agent's park has none
    mode: Literal["finish_step", "interrupt_immediate", "wait_for_completion", ""]
    conditions: dict[str, Any] | None
    deadline: str | None  # ISO 8601
    pausedFrom: str  # the state the task was paused from
    supersedes: NotRequired[str]  # paused: the handle of the agent's park this hold replaced
    summary: NotRequired[str]  # parked


class ResumedData(TypedDict, closed=True):
    handle: str | None
    cause: Literal["explicit_resume", "condition_fired", "timeout", "external_event"]
    hadResumeInput: bool
    continueTranscript: bool


class TimedOutData(TypedDict, closed=True):
    handle: str
    onTimeout: Literal["fail"]  # the other onTimeout values resume the task instead


class CanceledData(TypedDict, total=False, closed=True):
    handle: str  # the suspension the cancel ended
    withdrawnRequestId: str  # the input request the cancel withdrew


# The shape of each kind's data: every kind has one (NoData when it carries nothing).
SHAPES: dict[EventKind, type] = {
    EventKind.CREATED: CreatedData,
    EventKind.STARTED: StateData,
    EventKind.MESSAGE_ADDED: MessageData,
    EventKind.PROGRESS: ProgressData,
    EventKind.ARTIFACT_ADDED: ArtifactData,
    EventKind.INPUT_REQUESTED: InputRequestedData,
    EventKind.INPUT_PROVIDED: InputProvidedData,
    EventKind.PAUSED: SuspensionData,
    EventKind.PARKED: SuspensionData,
    EventKind.RESUMED: ResumedData,
    EventKind.TIMED_OUT: TimedOutData,
    EventKind.RETRYING: RetryingData,
    EventKind.PICKED_UP: NoData,
    EventKind.TOOL_CALL: ToolCallData,
    EventKind.HOST_NOTE: HostNoteData,
    EventKind.TURN_ENDED: NoData,
    EventKind.COMPLETED: StateData,
    EventKind.FAILED: StateData,
    EventKind.REJECTED: StateData,
    EventKind.CANCELED: CanceledData,
}


class EventShapeError(Exception):
    """An event's data does not have its kind's shape (a writer and SHAPES disagree)."""


def check_data(kind: str, data: dict[str, Any]) -> None:
    """Raise EventShapeError unless `data` (as stored: `{}` for none) has the shape of
    `kind`: strictly (no coercion: "1" is not an int, 1 is not a bool's True), no key
    missing that the shape requires, none it does not list. The services call it as they
    write each event when the check is on (the test suite: a2a.services._core)."""
    try:
        shape = SHAPES[EventKind(kind)]
    except ValueError:
        raise EventShapeError(f"{kind!r} is not an EventKind") from None
    from pydantic import ValidationError

    try:
        _adapter(shape).validate_python(data, strict=True)
    except ValidationError as exc:
        raise EventShapeError(f"{kind} data {data!r} is not a {shape.__name__}: {exc}") from None


@functools.cache
def _adapter(shape: type):
    """pydantic's validator for a shape, built once (imported only where checks run)."""
    from pydantic import TypeAdapter

    return TypeAdapter(shape)


# Events that move the task's status (what a status subscriber shows). "created" is not
# one: a new task is shown by its first snapshot.
STATUS_KINDS = frozenset(
    {
        EventKind.STARTED,
        EventKind.INPUT_REQUESTED,
        EventKind.INPUT_PROVIDED,
        EventKind.PAUSED,
        EventKind.PARKED,
        EventKind.RESUMED,
        EventKind.TIMED_OUT,
        EventKind.COMPLETED,
        EventKind.FAILED,
        EventKind.REJECTED,
        EventKind.CANCELED,
    }
)
SUSPENDING_KINDS = frozenset({EventKind.PAUSED, EventKind.PARKED})
# Events after which the task is over (its final state).
ENDING_KINDS = frozenset(
    {
        EventKind.COMPLETED,
        EventKind.FAILED,
        EventKind.REJECTED,
        EventKind.CANCELED,
        EventKind.TIMED_OUT,
    }
)


# Events that may record a client's message: a new task's first, an answer, and
# message_added when its role is "user" (`is_user_message` decides).
USER_MESSAGE_KINDS = frozenset(
    {EventKind.CREATED, EventKind.INPUT_PROVIDED, EventKind.MESSAGE_ADDED}
)


def is_user_message(kind: str, data: dict[str, Any] | None) -> bool:
    """A client's message arrived (new task, answer, or another message)."""
    if kind not in USER_MESSAGE_KINDS:
        return False
    return kind != EventKind.MESSAGE_ADDED or (data or {}).get("role") == "user"


def keeps_idle(kind: str, data: dict[str, Any] | None) -> bool:
    """An event after a hosted session's `turn_ended` that does not end its idle: the host
    stopping the idle agent's process (a2a.acp_host.idle) changes nothing the user waits
    for — the session still takes up the next message. Every other event ends the idle."""
    return kind == EventKind.HOST_NOTE and (data or {}).get("what") == "idle_stopped"


def is_agent_text(kind: str, data: dict[str, Any] | None) -> bool:
    """The agent said something (an agent message in the history)."""
    return kind == EventKind.MESSAGE_ADDED and (data or {}).get("role") == "agent"
