"""Structured input requests and their answers (docs/design/input-requests.md): an agent's request
is validated when it is made, and an answer is validated against the request's fields
before the task goes back to work, so a bad answer is refused instead of killing the run."""

from __future__ import annotations

import pytest

from a2a.input_requests import (
    MAX_TEXT,
    REQUEST_TYPE,
    RESPONSE_TYPE,
    decision_of,
    find_data_part,
    parse_request,
    validate_values,
    values_from_text,
)
from a2a.validation import ValidationFailed


def request_errors(raw) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as info:
        parse_request(raw)
    return info.value.errors


def value_errors(request, values) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as info:
        validate_values(request, values)
    return info.value.errors


def one_field(**field) -> dict:
    """A parsed request with a single field named "x"."""
    return parse_request({"requestId": "r-1", "fields": [{"name": "x", **field}]})


# --- parse_request -----------------------------------------------------------------------


def test_valid_request_keeps_every_documented_key():
    raw = {
        "type": REQUEST_TYPE,
        "requestId": "req-7",
        "title": "Approve the plan",
        "description": "The agent wants to deploy",
        "metadata": {"source": "planner"},
        "fields": [
            {"name": "decision", "label": "Decision", "type": "approval", "required": True},
            {"name": "note", "type": "text", "help": "optional"},
            {"name": "env", "type": "enum", "options": ["prod", "staging"], "default": "staging"},
            {"name": "replicas", "type": "integer", "default": 3},
            {"name": "ratio", "type": "number", "default": 0.5},
            {"name": "dry", "type": "boolean", "default": False},
            {"name": "who", "type": "string"},
        ],
    }
    assert parse_request(raw) == raw


def test_request_type_is_filled_in_and_fields_default_to_empty():
    assert parse_request({"requestId": "r"}) == {
        "type": REQUEST_TYPE,
        "requestId": "r",
        "fields": [],
    }


def test_constants_are_the_documented_wire_names():
    assert REQUEST_TYPE == "a2a.input.request"
    assert RESPONSE_TYPE == "a2a.input.response"


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        # unknown keys at the top level and in a field
        ({"requestId": "r", "question": "?"}, "question"),
        ({"requestId": "r", "fields": [{"name": "a", "type": "string", "min": 1}]}, "fields.0.min"),
        # requestId
        ({}, "requestId"),
        ({"requestId": ""}, "requestId"),
        ({"requestId": None}, "requestId"),
        ({"requestId": 12}, "requestId"),
        # title / description
        ({"requestId": "r", "title": 3}, "title"),
        ({"requestId": "r", "description": ["x"]}, "description"),
        # fields container
        ({"requestId": "r", "fields": {"name": "a"}}, "fields"),
        ({"requestId": "r", "fields": ["a"]}, "fields.0"),
        # field type
        ({"requestId": "r", "fields": [{"name": "a", "type": "date"}]}, "fields.0.type"),
        ({"requestId": "r", "fields": [{"name": "a"}]}, "fields.0.type"),
        # field name
        ({"requestId": "r", "fields": [{"type": "string"}]}, "fields.0.name"),
        ({"requestId": "r", "fields": [{"name": "", "type": "string"}]}, "fields.0.name"),
        (
            {
                "requestId": "r",
                "fields": [{"name": "a", "type": "string"}, {"name": "a", "type": "text"}],
            },
            "fields.1.name",
        ),
        # enum options
        ({"requestId": "r", "fields": [{"name": "a", "type": "enum"}]}, "fields.0.options"),
        (
            {"requestId": "r", "fields": [{"name": "a", "type": "enum", "options": []}]},
            "fields.0.options",
        ),
        (
            {"requestId": "r", "fields": [{"name": "a", "type": "enum", "options": "a,b"}]},
            "fields.0.options",
        ),
        # required
        (
            {"requestId": "r", "fields": [{"name": "a", "type": "string", "required": "yes"}]},
            "fields.0.required",
        ),
    ],
)
def test_bad_request_names_exactly_the_bad_field(raw, path: str):
    assert list(request_errors(raw)) == [path]


@pytest.mark.parametrize(
    ("field", "default"),
    [
        ({"type": "integer"}, "three"),
        ({"type": "integer"}, 1.5),
        ({"type": "integer"}, True),
        ({"type": "number"}, "0.5"),
        ({"type": "boolean"}, 1),
        ({"type": "boolean"}, "false"),
        ({"type": "string"}, "two\nlines"),
        ({"type": "string"}, 5),
        ({"type": "text"}, None),
        ({"type": "enum", "options": ["a", "b"]}, "c"),
        ({"type": "approval"}, "maybe"),
    ],
)
def test_default_that_does_not_fit_its_type_is_refused(field: dict, default):
    raw = {"requestId": "r", "fields": [{"name": "a", **field, "default": default}]}
    assert list(request_errors(raw)) == ["fields.0.default"]


def test_request_must_be_an_object():
    assert list(request_errors(["requestId"])) == [""]


def test_every_problem_in_a_request_is_reported_at_once():
    errors = request_errors(
        {
            "extra": 1,
            "fields": [
                {"name": "a", "type": "nope"},
                {"name": "b", "type": "enum"},
                {"name": "c", "type": "integer", "default": "x"},
            ],
        }
    )
    assert set(errors) == {
        "extra",
        "requestId",
        "fields.0.type",
        "fields.1.options",
        "fields.2.default",
    }


# --- validate_values: one field type at a time ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "cleaned"),
    [
        ({"type": "string"}, "Ada Lovelace", "Ada Lovelace"),
        ({"type": "string"}, "x" * MAX_TEXT, "x" * MAX_TEXT),
        ({"type": "text"}, "line one\nline two", "line one\nline two"),
        ({"type": "number"}, 2, 2),
        ({"type": "number"}, 2.5, 2.5),
        ({"type": "number"}, -0.25, -0.25),
        ({"type": "integer"}, 3, 3),
        ({"type": "integer"}, 0, 0),
        ({"type": "integer"}, -4, -4),
        ({"type": "boolean"}, True, True),
        ({"type": "boolean"}, False, False),
        ({"type": "enum", "options": ["prod", "staging"]}, "prod", "prod"),
        ({"type": "enum", "options": [1, 2, 3]}, 2, 2),
        ({"type": "approval"}, "approve", {"decision": "approve", "comment": ""}),
        ({"type": "approval"}, "reject", {"decision": "reject", "comment": ""}),
        ({"type": "approval"}, {"decision": "approve"}, {"decision": "approve", "comment": ""}),
        (
            {"type": "approval"},
            {"decision": "reject", "comment": "too risky"},
            {"decision": "reject", "comment": "too risky"},
        ),
    ],
)
def test_good_value_is_accepted(field: dict, value, cleaned):
    assert validate_values(one_field(**field), {"x": value}) == {"x": cleaned}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ({"type": "string"}, "two\nlines"),
        ({"type": "string"}, 5),
        ({"type": "string"}, ["a"]),
        ({"type": "string"}, "x" * (MAX_TEXT + 1)),
        ({"type": "text"}, 5),
        ({"type": "text"}, "x" * (MAX_TEXT + 1)),
        ({"type": "number"}, "2"),
        ({"type": "number"}, True),
        ({"type": "number"}, [1]),
        ({"type": "integer"}, 1.5),
        ({"type": "integer"}, 2.0),
        ({"type": "integer"}, True),
        ({"type": "integer"}, "3"),
        ({"type": "boolean"}, 1),
        ({"type": "boolean"}, 0),
        ({"type": "boolean"}, "true"),
        ({"type": "enum", "options": ["prod", "staging"]}, "dev"),
        ({"type": "enum", "options": ["prod", "staging"]}, "PROD"),
        ({"type": "enum", "options": ["prod", "staging"]}, ["prod"]),
        ({"type": "approval"}, "approved"),
        ({"type": "approval"}, "yes"),
        ({"type": "approval"}, True),
        ({"type": "approval"}, {"decision": "maybe"}),
        ({"type": "approval"}, {"comment": "no decision"}),
        ({"type": "approval"}, {"decision": "approve", "by": "ops"}),
        ({"type": "approval"}, {"decision": "approve", "comment": 5}),
    ],
)
def test_bad_value_is_refused_under_its_field(field: dict, value):
    errors = value_errors(one_field(**field), {"x": value})
    assert list(errors) == ["values.x"]
    assert errors["values.x"][0]


def test_enum_message_lists_the_options():
    msg = value_errors(one_field(type="enum", options=["prod", "staging"]), {"x": "dev"})
    assert "prod" in msg["values.x"][0] and "staging" in msg["values.x"][0]


def test_approval_message_names_the_decisions():
    msg = value_errors(one_field(type="approval"), {"x": {"decision": "maybe"}})["values.x"][0]
    assert "approve" in msg and "reject" in msg


# --- validate_values: required, optional, defaults, unknown keys ---------------------------


@pytest.mark.parametrize("missing", [{}, {"x": None}, {"x": ""}])
def test_required_field_must_be_answered(missing: dict):
    errors = value_errors(one_field(type="string", required=True), missing)
    assert errors == {"values.x": ["this field is required"]}


@pytest.mark.parametrize(
    ("field", "value"),
    [({"type": "boolean"}, False), ({"type": "integer"}, 0), ({"type": "number"}, 0.0)],
)
def test_falsy_answer_to_a_required_field_counts_as_an_answer(field: dict, value):
    """false and 0 are real answers, not missing ones."""
    assert validate_values(one_field(required=True, **field), {"x": value}) == {"x": value}


@pytest.mark.parametrize("missing", [{}, {"x": None}, {"x": ""}])
def test_optional_field_may_be_left_out(missing: dict):
    assert validate_values(one_field(type="text"), missing) == {}


@pytest.mark.parametrize("missing", [{}, {"x": None}, {"x": ""}])
def test_default_is_filled_in(missing: dict):
    request = one_field(type="enum", options=["prod", "staging"], default="staging")
    assert validate_values(request, missing) == {"x": "staging"}


def test_default_satisfies_a_required_field():
    request = one_field(type="integer", required=True, default=3)
    assert validate_values(request, {}) == {"x": 3}


def test_given_value_wins_over_the_default():
    request = one_field(type="integer", default=3)
    assert validate_values(request, {"x": 5}) == {"x": 5}


def test_unknown_value_keys_are_refused():
    request = one_field(type="string")
    assert value_errors(request, {"x": "ok", "y": 1, "z": 2}) == {
        "values.y": ["unknown field"],
        "values.z": ["unknown field"],
    }


@pytest.mark.parametrize(
    "request_",
    [{"requestId": "r"}, {"requestId": "r", "fields": []}, {}],
    ids=["parsed-without-fields", "empty-fields", "no-request"],
)
def test_request_without_fields_accepts_any_values(request_: dict):
    request = parse_request(request_) if request_ else request_
    values = {"free": "text", "n": 1, "nested": {"a": [1, 2]}, "flag": None}
    assert validate_values(request, values) == values


@pytest.mark.parametrize("values", [None, "approve", ["x"], 3])
def test_values_must_be_an_object(values):
    assert list(value_errors(one_field(type="string"), values)) == ["values"]


def test_every_bad_value_is_reported_at_once():
    request = parse_request(
        {
            "requestId": "r",
            "fields": [
                {"name": "decision", "type": "approval", "required": True},
                {"name": "count", "type": "integer"},
                {"name": "ok", "type": "boolean"},
                {"name": "fine", "type": "text"},
            ],
        }
    )
    errors = value_errors(request, {"count": 1.5, "ok": "true", "fine": "yes", "oops": 1})
    assert set(errors) == {"values.decision", "values.count", "values.ok", "values.oops"}


def test_a_full_answer_is_cleaned():
    request = parse_request(
        {
            "requestId": "r",
            "fields": [
                {"name": "decision", "type": "approval", "required": True},
                {"name": "note", "type": "text"},
                {"name": "env", "type": "enum", "options": ["prod", "staging"], "default": "prod"},
            ],
        }
    )
    assert validate_values(request, {"decision": "approve", "note": "ship it"}) == {
        "decision": {"decision": "approve", "comment": ""},
        "note": "ship it",
        "env": "prod",
    }


# --- find_data_part ----------------------------------------------------------------------

RESPONSE = {"type": RESPONSE_TYPE, "requestId": "r-1", "values": {"x": 1}}


def test_find_data_part_returns_the_data_of_the_matching_part():
    parts = [
        {"kind": "text", "text": "here you go"},
        {"kind": "data", "data": {"type": "something.else"}},
        {"kind": "data", "data": RESPONSE},
    ]
    assert find_data_part(parts, RESPONSE_TYPE) == RESPONSE


def test_find_data_part_returns_the_first_match():
    second = {**RESPONSE, "requestId": "r-2"}
    parts = [{"kind": "data", "data": RESPONSE}, {"kind": "data", "data": second}]
    assert find_data_part(parts, RESPONSE_TYPE)["requestId"] == "r-1"


@pytest.mark.parametrize(
    "parts",
    [
        [],
        [{"kind": "text", "text": "approve"}],
        [{"kind": "data", "data": {"type": REQUEST_TYPE, "requestId": "r-1"}}],
        [{"kind": "data", "data": {"requestId": "r-1", "values": {}}}],
        [{"kind": "data", "data": [RESPONSE]}],
        [{"kind": "data"}],
        [{"kind": "text", "data": RESPONSE}],
    ],
    ids=["none", "text-only", "other-type", "untyped", "data-not-object", "no-data", "not-data"],
)
def test_find_data_part_finds_nothing(parts):
    assert find_data_part(parts, RESPONSE_TYPE) is None


# --- decision_of -------------------------------------------------------------------------

APPROVAL = {
    "requestId": "r",
    "fields": [{"name": "go", "type": "approval", "required": True}, {"name": "n", "type": "text"}],
}


@pytest.mark.parametrize(
    ("answer", "decision"),
    [("approve", "approved"), ("reject", "rejected"), ({"decision": "reject"}, "rejected")],
)
def test_decision_of_an_approval(answer, decision: str):
    request = parse_request(APPROVAL)
    values = validate_values(request, {"go": answer, "n": "why"})
    assert decision_of(request, values) == decision


def test_decision_of_a_request_without_approval_is_provided():
    request = one_field(type="string")
    assert decision_of(request, validate_values(request, {"x": "hi"})) == "provided"


def test_decision_of_an_unanswered_optional_approval_is_provided():
    request = one_field(type="approval")
    assert decision_of(request, validate_values(request, {})) == "provided"


def test_decision_of_a_request_without_fields_is_provided():
    assert decision_of(parse_request({"requestId": "r"}), {"go": "approve"}) == "provided"


def test_enum_compares_as_json_not_as_python():
    """An enum of [1, 2] must not accept true (Python's True == 1)."""
    request = parse_request(
        {"requestId": "r", "fields": [{"name": "n", "type": "enum", "options": [1, 2]}]}
    )
    with pytest.raises(ValidationFailed) as err:
        validate_values(request, {"n": True})
    assert list(err.value.errors) == ["values.n"]
    assert validate_values(request, {"n": 1}) == {"n": 1}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_number_fields_refuse_values_json_cannot_carry(value):
    request = parse_request({"requestId": "r", "fields": [{"name": "x", "type": "number"}]})
    with pytest.raises(ValidationFailed):
        validate_values(request, {"x": value})


def test_typed_text_answers_the_one_required_field_and_the_optional_ones_keep_defaults():
    """A hosted agent's permission with "Remember for this session": a typed "approve"
    (an A2A client, an editor) still answers it, once; two required fields still refuse."""
    request = {"fields": [
        {"name": "decision", "type": "approval", "required": True},
        {"name": "remember", "type": "boolean", "required": False, "default": False},
    ]}  # fmt: skip
    values = validate_values(request, values_from_text(request, "approve: fine"))
    assert values == {"decision": {"decision": "approve", "comment": "fine"}, "remember": False}
    both = {"fields": [{"name": "a", "type": "string", "required": True},
                       {"name": "b", "type": "string", "required": True}]}  # fmt: skip
    with pytest.raises(ValidationFailed, match="this request has 2 fields"):
        values_from_text(both, "x")
