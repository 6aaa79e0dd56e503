"""The vocabulary of the TaskEvent log: every kind of event and the shape of its data.

The services write these (one per change, `a2a.services._core.record`); the projection,
the A2A streams, push delivery, the runtime's wakeups, the ACP door and the dashboard's
timeline read them. Keeping the names and shapes here means a reader never guesses what a
writer put in `data`. `EventKind` is a StrEnum: members compare equal to the stored strings.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict


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
    # no data; a worker took the run of a task resumed to work (state unchanged): the end of
    # "resumed, waiting for a worker" (a queued task's pickup is its `started`). Not a
    # status event: A2A streams and push never carry it
    PICKED_UP = "picked_up"
    TOOL_CALL = "tool_call"  # ToolCallData; a hosted ACP agent's tool call or its update
    # HostNoteData; what the host of an ACP agent saw happen to its process (an exit, a
    # turn cut off, a takeover, a refused request): a timeline fact, never a state change
    HOST_NOTE = "host_note"
    COMPLETED = "completed"  # StateData (+ replyOnly)
    FAILED = "failed"  # StateData; the reason is TaskEvent.reason
    REJECTED = "rejected"  # StateData
    CANCELED = "canceled"  # CanceledData


class CreatedData(TypedDict):
    messageSeq: int  # the first user message


class StateData(TypedDict, total=False):
    messageSeq: int  # the agent's status message, when it said something
    replyOnly: bool  # completed: the agent answered with a Message (A2A message response)


class MessageData(TypedDict):
    messageSeq: int
    role: str  # "user" | "agent"


class RetryingData(TypedDict):
    attempt: int  # infrastructure faults in a row, this one included
    retryAt: str  # ISO 8601: when the run is tried again
    error: str  # the fault, e.g. "OperationalError: terminating connection ..."


class ToolCallData(TypedDict, total=False):
    toolCallId: str
    title: str
    kind: str  # ACP's ToolKind: read, edit, delete, move, search, execute, think, fetch, other
    status: str  # pending | in_progress | completed | failed
    content: str  # the text of its content blocks, shortened


class HostNoteData(TypedDict, total=False):
    what: str  # exited | turn_lost | takeover | refused | stalled | output_limit | garbage
    detail: str


class ProgressData(TypedDict):
    done: int
    total: int


class ArtifactData(TypedDict):
    artifactId: str
    append: bool
    partsFrom: int  # index of the first part this event added
    partsCount: int  # how many parts this event added


class InputRequestedData(TypedDict):
    requestId: str
    number: int  # the task's n-th request (interrupt ids are input-<task>-<n>)
    messageSeq: int  # the status message holding the explanation and the request


class InputProvidedData(TypedDict):
    requestId: str | None
    values: dict[str, Any]  # validated against the request's fields
    decision: str  # "approved" | "rejected" | "provided"
    messageSeq: int


class SuspensionData(TypedDict, total=False):
    handle: str
    initiator: str  # "client" | "agent"
    mode: str  # finish_step | interrupt_immediate | wait_for_completion | "" (agent)
    conditions: dict[str, Any] | None
    deadline: str | None  # ISO 8601
    pausedFrom: str  # the state the task was paused from
    supersedes: str  # paused: the handle of the agent's park this hold replaced
    summary: str  # parked


class ResumedData(TypedDict):
    handle: str | None
    cause: str  # explicit_resume | condition_fired | timeout | external_event
    hadResumeInput: bool
    continueTranscript: bool


class TimedOutData(TypedDict):
    handle: str
    onTimeout: str


class CanceledData(TypedDict, total=False):
    handle: str  # the suspension the cancel ended
    withdrawnRequestId: str  # the input request the cancel withdrew


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


def is_agent_text(kind: str, data: dict[str, Any] | None) -> bool:
    """The agent said something (an agent message in the history)."""
    return kind == EventKind.MESSAGE_ADDED and (data or {}).get("role") == "agent"
