"""Resume conditions (docs/design/a2a-surface.md, D26: `conditions` / `resumeWhen`): parsing,
the canonical stored form, deadlines, refusals with their exact error paths, and event
matching."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from a2a.conditions import (
    MAX_DURATION_MINUTES,
    ON_TIMEOUT,
    Conditions,
    event_wakes,
    parse_conditions,
)
from a2a.validation import ValidationFailed, is_int, is_number

START = datetime(2026, 11, 3, 23, 45, tzinfo=UTC)


def refusal(raw) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as info:
        parse_conditions(raw)
    return info.value.errors


# --- no conditions -----------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, {}])
def test_none_and_empty_mean_no_conditions(raw):
    c = parse_conditions(raw)
    assert c == Conditions()
    assert c.as_dict() is None
    assert c.deadline(START) is None


# --- valid shapes ------------------------------------------------------------------------


def test_on_event():
    c = parse_conditions({"onEvent": "ci.build.completed:1234"})
    assert c.on_event == "ci.build.completed:1234"
    assert c.as_dict() == {"onEvent": "ci.build.completed:1234"}
    assert c.deadline(START) is None


def test_trigger_with_match():
    raw = {"trigger": {"event": "deploy.finished", "match": {"env": "prod", "build.ok": True}}}
    c = parse_conditions(raw)
    assert c.as_dict() == {
        "trigger": {"event": "deploy.finished", "match": {"env": "prod", "build.ok": True}}
    }


def test_trigger_without_match_is_stored_with_an_empty_match():
    c = parse_conditions({"trigger": {"event": "deploy.finished"}})
    assert c.as_dict() == {"trigger": {"event": "deploy.finished", "match": {}}}


def test_timeout_defaults_to_fail():
    c = parse_conditions({"timeout": {"durationMinutes": 30}})
    assert c.duration_minutes == 30
    assert c.on_timeout == "fail"
    assert c.as_dict() == {"timeout": {"durationMinutes": 30, "onTimeout": "fail"}}


@pytest.mark.parametrize("on_timeout", ["fail", "resume_with_summary"])
def test_timeout_with_on_timeout(on_timeout: str):
    c = parse_conditions({"timeout": {"durationMinutes": 5, "onTimeout": on_timeout}})
    assert c.on_timeout == on_timeout
    assert c.as_dict() == {"timeout": {"durationMinutes": 5, "onTimeout": on_timeout}}


@pytest.mark.parametrize("given", ["approved", {"decision": "approve"}, None, 0, ""])
def test_timeout_resume_with_input_keeps_the_input(given):
    """Any JSON value is a valid input, including falsy ones: it is what the agent gets."""
    raw = {"timeout": {"durationMinutes": 60, "onTimeout": "resume_with_input", "input": given}}
    c = parse_conditions(raw)
    assert c.timeout_input == given
    assert c.as_dict() == {
        "timeout": {"durationMinutes": 60, "onTimeout": "resume_with_input", "input": given}
    }


def test_on_timeout_enum_is_the_documented_one():
    assert set(ON_TIMEOUT) == {"fail", "resume_with_summary", "resume_with_input"}


def test_all_three_conditions_together():
    raw = {
        "onEvent": "ci.done",
        "trigger": {"event": "deploy.finished", "match": {"env": "prod"}},
        "timeout": {"durationMinutes": 90, "onTimeout": "resume_with_summary"},
    }
    c = parse_conditions(raw)
    assert c.as_dict() == {
        "onEvent": "ci.done",
        "trigger": {"event": "deploy.finished", "match": {"env": "prod"}},
        "timeout": {"durationMinutes": 90, "onTimeout": "resume_with_summary"},
    }


def test_canonical_form_parses_back_to_the_same_conditions():
    """The stored form must be accepted again (e.g. when a pause is copied or re-armed)."""
    raw = {
        "onEvent": "ci.done",
        "trigger": {"event": "deploy.finished"},
        "timeout": {"durationMinutes": 15, "onTimeout": "resume_with_input", "input": {"a": 1}},
    }
    once = parse_conditions(raw)
    assert parse_conditions(once.as_dict()) == once


def test_duration_at_the_maximum_is_accepted():
    c = parse_conditions({"timeout": {"durationMinutes": MAX_DURATION_MINUTES}})
    assert c.duration_minutes == MAX_DURATION_MINUTES


# --- deadline ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("minutes", "expected"),
    [
        (1, datetime(2026, 11, 3, 23, 46, tzinfo=UTC)),
        (30, datetime(2026, 11, 4, 0, 15, tzinfo=UTC)),
        (60 * 24 * 30, datetime(2026, 12, 3, 23, 45, tzinfo=UTC)),
    ],
)
def test_deadline_adds_the_duration(minutes: int, expected: datetime):
    c = parse_conditions({"timeout": {"durationMinutes": minutes}})
    assert c.deadline(START) == expected


def test_deadline_keeps_the_time_zone_of_the_start():
    start = datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    c = parse_conditions({"timeout": {"durationMinutes": 45}})
    got = c.deadline(start)
    assert got == datetime(2026, 3, 1, 12, 45, tzinfo=timezone(timedelta(hours=2)))
    assert got.utcoffset() == timedelta(hours=2)


def test_no_deadline_without_a_timeout():
    assert parse_conditions({"onEvent": "x"}).deadline(START) is None


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        # unknown keys, at every level
        ({"onEvnt": "x"}, "onEvnt"),
        ({"onEvent": "x", "when": "later"}, "when"),
        ({"timeout": {"durationMinutes": 5, "minutes": 5}}, "timeout.minutes"),
        ({"trigger": {"event": "e", "filter": {}}}, "trigger.filter"),
        # durationMinutes
        ({"timeout": {}}, "timeout.durationMinutes"),
        ({"timeout": {"onTimeout": "fail"}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": 0}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": -5}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": 1.5}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": 30.0}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": "30"}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": True}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": None}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": MAX_DURATION_MINUTES + 1}}, "timeout.durationMinutes"),
        ({"timeout": {"durationMinutes": 10**30}}, "timeout.durationMinutes"),
        # onTimeout
        ({"timeout": {"durationMinutes": 5, "onTimeout": "resume"}}, "timeout.onTimeout"),
        ({"timeout": {"durationMinutes": 5, "onTimeout": "FAIL"}}, "timeout.onTimeout"),
        ({"timeout": {"durationMinutes": 5, "onTimeout": None}}, "timeout.onTimeout"),
        # input and resume_with_input belong together
        (
            {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_input"}},
            "timeout.input",
        ),
        ({"timeout": {"durationMinutes": 5, "input": "x"}}, "timeout.input"),
        ({"timeout": {"durationMinutes": 5, "onTimeout": "fail", "input": 1}}, "timeout.input"),
        (
            {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_summary", "input": 1}},
            "timeout.input",
        ),
        # timeout itself
        ({"timeout": 30}, "timeout"),
        ({"timeout": [30]}, "timeout"),
        # onEvent: a non-empty topic without spaces
        ({"onEvent": ""}, "onEvent"),
        ({"onEvent": "   "}, "onEvent"),
        ({"onEvent": "build done"}, "onEvent"),
        ({"onEvent": "build\tdone"}, "onEvent"),
        ({"onEvent": " build"}, "onEvent"),
        ({"onEvent": 42}, "onEvent"),
        ({"onEvent": None}, "onEvent"),
        ({"onEvent": ["a"]}, "onEvent"),
        # trigger
        ({"trigger": "deploy.finished"}, "trigger"),
        ({"trigger": ["deploy.finished"]}, "trigger"),
        ({"trigger": None}, "trigger"),
        ({"trigger": {}}, "trigger.event"),
        ({"trigger": {"match": {"env": "prod"}}}, "trigger.event"),
        ({"trigger": {"event": ""}}, "trigger.event"),
        ({"trigger": {"event": "deploy finished"}}, "trigger.event"),
        ({"trigger": {"event": 7}}, "trigger.event"),
        ({"trigger": {"event": "e", "match": "env=prod"}}, "trigger.match"),
        ({"trigger": {"event": "e", "match": [["env", "prod"]]}}, "trigger.match"),
        ({"trigger": {"event": "e", "match": None}}, "trigger.match"),
    ],
)
def test_refusal_names_exactly_the_bad_field(raw, path: str):
    errors = refusal(raw)
    assert list(errors) == [path]
    assert errors[path] and all(isinstance(m, str) and m for m in errors[path])


@pytest.mark.parametrize("raw", ["onEvent", ["onEvent"], 30, True])
def test_conditions_must_be_an_object(raw):
    assert list(refusal(raw)) == [""]


def test_unknown_key_message():
    assert refusal({"bogus": 1}) == {"bogus": ["unknown field"]}


def test_duration_messages_say_what_is_allowed():
    too_short = refusal({"timeout": {"durationMinutes": 0}})
    assert "greater than 0" in too_short["timeout.durationMinutes"][0]
    too_long = refusal({"timeout": {"durationMinutes": MAX_DURATION_MINUTES + 1}})
    assert str(MAX_DURATION_MINUTES) in too_long["timeout.durationMinutes"][0]


def test_on_timeout_message_lists_the_choices():
    msg = refusal({"timeout": {"durationMinutes": 5, "onTimeout": "later"}})["timeout.onTimeout"]
    for choice in ("fail", "resume_with_summary", "resume_with_input"):
        assert choice in msg[0]


def test_every_problem_is_reported_at_once():
    """A client fixing one field at a time would be annoyed: all errors come together."""
    errors = refusal(
        {
            "onEvent": "has space",
            "trigger": {"event": "e", "match": 3, "extra": 1},
            "timeout": {"durationMinutes": 0, "onTimeout": "never"},
            "bogus": True,
        }
    )
    assert set(errors) == {
        "onEvent",
        "trigger.match",
        "trigger.extra",
        "timeout.durationMinutes",
        "timeout.onTimeout",
        "bogus",
    }


# --- ValidationFailed and the shared number checks -----------------------------------------


def test_validation_failed_message_and_prefix():
    err = ValidationFailed({"timeout.durationMinutes": ["must be an integer greater than 0"]})
    assert str(err) == "timeout.durationMinutes: must be an integer greater than 0"
    moved = err.prefixed("conditions")
    assert moved.errors == {
        "conditions.timeout.durationMinutes": ["must be an integer greater than 0"]
    }


def test_validation_failed_prefix_of_a_root_error():
    """An error about the whole value lands on the prefix itself, not on "conditions."."""
    err = ValidationFailed({"": ["must be an object"]})
    assert str(err) == "must be an object"
    assert err.prefixed("resumeWhen").errors == {"resumeWhen": ["must be an object"]}


@pytest.mark.parametrize(
    ("value", "int_", "number"),
    [
        (1, True, True),
        (0, True, True),
        (-3, True, True),
        (1.5, False, True),
        (2.0, False, True),
        (True, False, False),
        (False, False, False),
        ("1", False, False),
        (None, False, False),
    ],
)
def test_json_booleans_are_not_numbers(value, int_: bool, number: bool):
    assert is_int(value) is int_
    assert is_number(value) is number


# --- event_wakes -------------------------------------------------------------------------


def stored(raw) -> dict | None:
    """Conditions as the database keeps them."""
    return parse_conditions(raw).as_dict()


def test_on_event_exact_match_wakes():
    c = stored({"onEvent": "ci.build.completed:1234"})
    assert event_wakes(c, "ci.build.completed:1234", {}) == "onEvent"


@pytest.mark.parametrize(
    "name", ["ci.build.completed:123", "ci.build.completed:12345", "CI.BUILD.COMPLETED:1234", ""]
)
def test_on_event_needs_the_exact_name(name: str):
    c = stored({"onEvent": "ci.build.completed:1234"})
    assert event_wakes(c, name, {}) is None


def test_trigger_without_match_wakes_on_the_event_name_alone():
    c = stored({"trigger": {"event": "deploy.finished"}})
    assert event_wakes(c, "deploy.finished", None) == "trigger"
    assert event_wakes(c, "deploy.finished", {"anything": 1}) == "trigger"


def test_trigger_matches_nested_dotted_fields():
    c = stored(
        {
            "trigger": {
                "event": "deploy.finished",
                "match": {"env": "prod", "build.status": "green", "build.meta.region": "eu"},
            }
        }
    )
    payload = {
        "env": "prod",
        "build": {"status": "green", "meta": {"region": "eu", "zone": "b"}},
        "extra": "ignored",
    }
    assert event_wakes(c, "deploy.finished", payload) == "trigger"


@pytest.mark.parametrize(
    "payload",
    [
        {"env": "staging", "build": {"status": "green"}},  # top-level mismatch
        {"env": "prod", "build": {"status": "red"}},  # nested mismatch
        {"env": "prod", "build": {}},  # nested field missing
        {"env": "prod"},  # parent missing
        {"env": "prod", "build": "green"},  # parent is not an object
        {"build": {"status": "green"}},  # top-level field missing
        {"env": "prod", "build.status": "green"},  # a literal dotted key is not a path
        None,
        [],
    ],
)
def test_trigger_does_not_wake_when_a_match_field_differs_or_is_missing(payload):
    match = {"env": "prod", "build.status": "green"}
    c = stored({"trigger": {"event": "deploy.finished", "match": match}})
    assert event_wakes(c, "deploy.finished", payload) is None


def test_trigger_ignores_other_event_names_even_with_a_matching_payload():
    c = stored({"trigger": {"event": "deploy.finished", "match": {"env": "prod"}}})
    assert event_wakes(c, "deploy.started", {"env": "prod"}) is None


def test_trigger_matches_non_string_values_exactly():
    c = stored({"trigger": {"event": "job", "match": {"exit": 0, "tags": ["a", "b"]}}})
    assert event_wakes(c, "job", {"exit": 0, "tags": ["a", "b"]}) == "trigger"
    assert event_wakes(c, "job", {"exit": 1, "tags": ["a", "b"]}) is None
    assert event_wakes(c, "job", {"exit": 0, "tags": ["b", "a"]}) is None


def test_on_event_is_checked_before_trigger():
    c = stored({"onEvent": "ci.done", "trigger": {"event": "deploy.finished"}})
    assert event_wakes(c, "ci.done", {}) == "onEvent"
    assert event_wakes(c, "deploy.finished", {}) == "trigger"
    assert event_wakes(c, "other", {}) is None


@pytest.mark.parametrize("conditions", [None, {}])
def test_no_conditions_never_wake(conditions):
    assert event_wakes(conditions, "ci.done", {"env": "prod"}) is None


def test_a_timeout_alone_is_not_woken_by_events():
    c = stored({"timeout": {"durationMinutes": 5}})
    assert event_wakes(c, "timeout", {}) is None
    assert event_wakes(c, "fail", {}) is None


@pytest.mark.parametrize(
    ("expected", "actual"),
    [(True, 1), (False, 0), (1, True), (0, False), ({"a": True}, {"a": 1}), ([False], [0])],
)
def test_trigger_match_compares_as_json_not_as_python(expected, actual):
    """JSON's true is not 1: a trigger waiting for {"ok": true} must not wake on {"ok": 1}."""
    c = stored({"trigger": {"event": "deploy.finished", "match": {"ok": expected}}})
    assert event_wakes(c, "deploy.finished", {"ok": actual}) is None
    assert event_wakes(c, "deploy.finished", {"ok": expected}) == "trigger"
