"""The task state machine, checked pair by pair against docs/design/task-states.md and
docs/design/bindu-dialect.md.

The expected table below is written out by hand from the documents, not read from
`a2a.lifecycle`, so a wrong entry in the module's tables shows up as a failing case.
"""

from __future__ import annotations

import itertools

import pytest

from a2a.lifecycle import (
    PAUSED,
    TERMINAL,
    Action,
    Dialect,
    Move,
    State,
    TransitionRefused,
    is_terminal,
    move,
    resume_target,
)

S = State
A = Action

# Marker for "resume goes back to the remembered state" (Move.to is None).
REMEMBERED = "remembered"
# Marker for an allowed no-op (RFC pause of a task already paused by the client).
NOOP = "noop"

NON_TERMINAL_NAMES = (
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "paused-by-client",
    "paused-by-agent",
)

# The table of docs/design/task-states.md, D10, for every action that is the same in both
# dialects.
COMMON: dict[str, dict[str, str]] = {
    "start": {"submitted": "working"},
    "request_input": {"working": "input-required"},
    "request_auth": {"working": "auth-required"},
    "provide_input": {"input-required": "working", "auth-required": "working"},
    "park": {"working": "paused-by-agent"},
    "resume": {"paused-by-client": REMEMBERED, "paused-by-agent": REMEMBERED},
    "timeout_fail": {"paused-by-client": "failed", "paused-by-agent": "failed"},
    "complete": {"working": "completed"},
    "fail": {"working": "failed"},
    "reject": {"working": "rejected", "submitted": "rejected"},
    "cancel": dict.fromkeys(NON_TERMINAL_NAMES, "canceled"),
}

# Pause differs by dialect.
PAUSE: dict[str, dict[str, str]] = {
    # RFC: submitted, working, paused-by-agent -> paused-by-client; a second client pause is
    # an idempotent success; input-required / auth-required are refused
    # (docs/design/task-states.md, D11, D12).
    "rfc": {
        "submitted": "paused-by-client",
        "working": "paused-by-client",
        "paused-by-agent": "paused-by-client",
        "paused-by-client": NOOP,
    },
    # Bindu: exactly submitted, working, input-required (docs/design/bindu-dialect.md,
    # rows 1-3); already suspended (row 7), auth-required (row 6) and terminal (row 5) are
    # -32040.
    "bindu": {
        "submitted": "paused-by-client",
        "working": "paused-by-client",
        "input-required": "paused-by-client",
    },
}


def expected(state: State, action: Action, dialect: Dialect) -> str | None:
    """The documented outcome: a target state name, REMEMBERED, NOOP, or None (refused)."""
    table = PAUSE[dialect.value] if action.value == "pause" else COMMON[action.value]
    return table.get(state.value)


def _case_id(case: tuple[State, Action, Dialect]) -> str:
    state, action, dialect = case
    return f"{dialect.value}-{state.value}-{action.value}"


ALL_CASES = list(itertools.product(State, Action, Dialect))


def test_every_action_is_covered_by_the_expected_table():
    """Guards the test itself: a new Action without a documented row must fail here."""
    assert {a.value for a in Action} == set(COMMON) | {"pause"}
    assert {s.value for s in State} == set(NON_TERMINAL_NAMES) | {
        "completed",
        "failed",
        "canceled",
        "rejected",
    }


@pytest.mark.parametrize(("state", "action", "dialect"), ALL_CASES, ids=map(_case_id, ALL_CASES))
def test_transition(state: State, action: Action, dialect: Dialect):
    want = expected(state, action, dialect)
    if want is None:
        with pytest.raises(TransitionRefused) as info:
            move(state, action, dialect)
        assert info.value.state is state
        assert info.value.action is action
        assert info.value.dialect is dialect
        return
    got = move(state, action, dialect)
    assert isinstance(got, Move)
    if want == REMEMBERED:
        assert got.to is None
        assert got.noop is False
    elif want == NOOP:
        assert got.to is state
        assert got.noop is True
    else:
        assert got.to is State(want)
        assert got.noop is False


@pytest.mark.parametrize("dialect", list(Dialect))
@pytest.mark.parametrize("state", ["completed", "failed", "canceled", "rejected"])
def test_terminal_states_allow_nothing(state: str, dialect: Dialect):
    for action in Action:
        with pytest.raises(TransitionRefused):
            move(state, action, dialect)


@pytest.mark.parametrize("action", [a for a in Action if a.value != "pause"])
@pytest.mark.parametrize("state", list(State))
def test_non_pause_actions_do_not_depend_on_dialect(state: State, action: Action):
    def outcome(dialect: Dialect):
        try:
            return move(state, action, dialect)
        except TransitionRefused:
            return "refused"

    assert outcome(Dialect.RFC) == outcome(Dialect.BINDU)


def test_default_dialect_is_rfc():
    """Without a dialect, a second pause is the RFC's idempotent success, not Bindu's -32040."""
    assert move(S.PAUSED_BY_CLIENT, A.PAUSE) == Move(S.PAUSED_BY_CLIENT, noop=True)
    with pytest.raises(TransitionRefused) as info:
        move(S.INPUT_REQUIRED, A.PAUSE)
    assert info.value.dialect is Dialect.RFC


def test_move_accepts_the_stored_string_form_of_a_state():
    assert move("working", A.COMPLETE) == Move(S.COMPLETED)
    with pytest.raises(TransitionRefused) as info:
        move("completed", A.CANCEL)
    assert info.value.state is S.COMPLETED


def test_move_rejects_an_unknown_state_name():
    with pytest.raises(ValueError):
        move("suspended", A.RESUME)


def test_refusal_message_names_the_action_and_the_state():
    with pytest.raises(TransitionRefused, match="cannot pause a task that is auth-required"):
        move(S.AUTH_REQUIRED, A.PAUSE, Dialect.BINDU)


def test_transition_refused_defaults_and_coerces_strings():
    err = TransitionRefused("working", "park")
    assert (err.state, err.action, err.dialect) == (S.WORKING, A.PARK, Dialect.RFC)
    assert TransitionRefused("working", "park", "bindu").dialect is Dialect.BINDU


@pytest.mark.parametrize(
    ("paused_from", "target"),
    [
        (None, "working"),
        ("submitted", "working"),
        ("working", "working"),
        ("input-required", "input-required"),
        ("paused-by-agent", "working"),
        ("paused-by-client", "working"),
        ("auth-required", "working"),
        (S.INPUT_REQUIRED, "input-required"),
        (S.SUBMITTED, "working"),
    ],
)
def test_resume_target(paused_from, target: str):
    """A task paused from input-required goes back to waiting (docs/design/bindu-dialect.md,
    row 19; task-states.md, D11); a task paused before it started, or while parked, resumes
    to work."""
    assert resume_target(paused_from) is State(target)


def test_terminal_and_paused_sets():
    assert {s.value for s in TERMINAL} == {"completed", "failed", "canceled", "rejected"}
    assert {s.value for s in PAUSED} == {"paused-by-client", "paused-by-agent"}


@pytest.mark.parametrize("state", list(State))
def test_is_terminal(state: State):
    want = state.value in {"completed", "failed", "canceled", "rejected"}
    assert is_terminal(state) is want
    assert is_terminal(state.value) is want


def test_state_values_are_the_wire_names():
    assert [s.value for s in State] == [
        *NON_TERMINAL_NAMES,
        "completed",
        "failed",
        "canceled",
        "rejected",
    ]
