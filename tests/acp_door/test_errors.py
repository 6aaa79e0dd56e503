"""The door's -32602 names the field the user typed, not the A2A message's inner path."""

from __future__ import annotations

import pytest

from a2a.acp_door.errors import from_domain, typed_field
from a2a.errors import ValidationFailed


@pytest.mark.parametrize(
    ("place", "typed"),
    [
        ("message.parts.0.data.values.priority", "priority"),
        ("message.parts.values.priority", "priority"),  # a typed (text) answer
        ("message.parts.1.data.requestId", "requestId"),
        ("message.parts", ""),  # the prompt as a whole
        ("message.contextId", "contextId"),
        ("values.due", "due"),
        ("prompt.1", "prompt.1"),  # the door's own names stay
        ("resumeWhen.timeout.durationMinutes", "resumeWhen.timeout.durationMinutes"),
        ("partsCount", "partsCount"),
    ],
)
def test_a_place_becomes_the_field_the_user_typed(place, typed):
    assert typed_field(place) == typed


def test_the_error_says_the_field_in_words_and_keeps_the_a2a_places_under_data():
    error = from_domain(
        ValidationFailed(
            {
                "message.parts.0.data.values.priority": ["must be one of low, high"],
                "": ["the task waits on a question: type your answer"],
            }
        )
    )
    assert error.code == -32602 and str(error) == "Invalid params"
    assert error.data["detail"] == (
        "priority: must be one of low, high; the task waits on a question: type your answer"
    )
    assert error.data["errors"] == {
        "priority": ["must be one of low, high"],
        "": ["the task waits on a question: type your answer"],
    }
    assert "message.parts.0.data.values.priority" in error.data["a2aErrors"]
