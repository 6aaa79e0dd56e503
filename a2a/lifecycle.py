"""The task state machine of docs/design/task-states.md, as data.

Pure Python on purpose: no Django import, so the table can be read, printed and tested
exhaustively without a database. `a2a.services` asks this module whether a move is allowed
before it writes anything; transports map a refusal to their own error codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class State(StrEnum):
    """Stored task states (A2A 0.3 kebab-case, plus the RFC's two paused states)."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    PAUSED_BY_CLIENT = "paused-by-client"
    PAUSED_BY_AGENT = "paused-by-agent"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"


class Action(StrEnum):
    """Everything that can be asked of a task."""

    START = "start"
    REQUEST_INPUT = "request_input"
    REQUEST_AUTH = "request_auth"
    PROVIDE_INPUT = "provide_input"
    PAUSE = "pause"
    PARK = "park"
    RESUME = "resume"
    TIMEOUT_FAIL = "timeout_fail"
    COMPLETE = "complete"
    FAIL = "fail"
    REJECT = "reject"
    CANCEL = "cancel"


class Dialect(StrEnum):
    """Pause dialects: the RFC (default) and Bindu's extension (docs/design/bindu-dialect.md)."""

    RFC = "rfc"
    BINDU = "bindu"


TERMINAL: frozenset[State] = frozenset(
    {State.COMPLETED, State.FAILED, State.CANCELED, State.REJECTED}
)
PAUSED: frozenset[State] = frozenset({State.PAUSED_BY_CLIENT, State.PAUSED_BY_AGENT})
WAITING_FOR_INPUT: frozenset[State] = frozenset({State.INPUT_REQUIRED, State.AUTH_REQUIRED})
ACTIVE: frozenset[State] = frozenset(State) - TERMINAL

# A resume goes back to the state remembered at pause time when it is one of these,
# otherwise to `working` (docs/design/task-states.md, D11: Bindu may pause an input-required task).
RESUMABLE_TO: frozenset[State] = frozenset({State.WORKING, State.INPUT_REQUIRED})


@dataclass(frozen=True)
class Move:
    """An allowed move. `to is None` means "the remembered state" (resume only);
    `noop` marks an idempotent repeat that changes nothing (RFC pause of a paused task)."""

    to: State | None
    noop: bool = False


REMEMBERED = Move(to=None)

_COMMON: dict[Action, dict[State, Move]] = {
    Action.START: {State.SUBMITTED: Move(State.WORKING)},
    Action.REQUEST_INPUT: {State.WORKING: Move(State.INPUT_REQUIRED)},
    Action.REQUEST_AUTH: {State.WORKING: Move(State.AUTH_REQUIRED)},
    Action.PROVIDE_INPUT: {
        State.INPUT_REQUIRED: Move(State.WORKING),
        State.AUTH_REQUIRED: Move(State.WORKING),
    },
    Action.PARK: {State.WORKING: Move(State.PAUSED_BY_AGENT)},
    Action.RESUME: {State.PAUSED_BY_CLIENT: REMEMBERED, State.PAUSED_BY_AGENT: REMEMBERED},
    Action.TIMEOUT_FAIL: {
        State.PAUSED_BY_CLIENT: Move(State.FAILED),
        State.PAUSED_BY_AGENT: Move(State.FAILED),
    },
    Action.COMPLETE: {State.WORKING: Move(State.COMPLETED)},
    Action.FAIL: {State.WORKING: Move(State.FAILED)},
    Action.REJECT: {State.WORKING: Move(State.REJECTED), State.SUBMITTED: Move(State.REJECTED)},
    Action.CANCEL: {s: Move(State.CANCELED) for s in ACTIVE},
}

_PAUSE: dict[Dialect, dict[State, Move]] = {
    # RFC: pausing a client-paused task is idempotent; pausing an agent-parked task is an
    # operator hold (its conditions stop firing). No input-required -> paused move
    # (docs/design/task-states.md, D11, D12).
    Dialect.RFC: {
        State.SUBMITTED: Move(State.PAUSED_BY_CLIENT),
        State.WORKING: Move(State.PAUSED_BY_CLIENT),
        State.PAUSED_BY_AGENT: Move(State.PAUSED_BY_CLIENT),
        State.PAUSED_BY_CLIENT: Move(State.PAUSED_BY_CLIENT, noop=True),
    },
    # Bindu: pausable states are exactly submitted, working, input-required; a second pause
    # is an error (docs/design/bindu-dialect.md, rows 1-7).
    Dialect.BINDU: {
        State.SUBMITTED: Move(State.PAUSED_BY_CLIENT),
        State.WORKING: Move(State.PAUSED_BY_CLIENT),
        State.INPUT_REQUIRED: Move(State.PAUSED_BY_CLIENT),
    },
}


class TransitionRefused(Exception):
    """The state machine does not allow `action` from `state` in `dialect`."""

    def __init__(self, state: State, action: Action, dialect: Dialect = Dialect.RFC) -> None:
        self.state, self.action, self.dialect = State(state), Action(action), Dialect(dialect)
        super().__init__(f"cannot {self.action.value} a task that is {self.state.value}")


def allowed_moves(action: Action, dialect: Dialect = Dialect.RFC) -> dict[State, Move]:
    """The from-state -> move table for one action."""
    if action is Action.PAUSE:
        return _PAUSE[dialect]
    return _COMMON[action]


def move(state: State | str, action: Action, dialect: Dialect = Dialect.RFC) -> Move:
    """The move `action` makes from `state`, or TransitionRefused."""
    state = State(state)
    found = allowed_moves(action, dialect).get(state)
    if found is None:
        raise TransitionRefused(state, action, dialect)
    return found


def resume_target(paused_from: State | str | None) -> State:
    """Where a resume lands: the remembered state if it is resumable, else working."""
    if paused_from is not None and State(paused_from) in RESUMABLE_TO:
        return State(paused_from)
    return State.WORKING


def is_terminal(state: State | str) -> bool:
    return State(state) in TERMINAL
