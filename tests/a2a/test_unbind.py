"""a2a.fields.unbind: a call's serializer is freed when the call drops it, not left to the
cyclic collector (whose full collections, under load, held every request and socket of a
web process for 50-80 ms: docs/production.md, "Garbage and the tail")."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from a2a.fields import unbind
from a2a.protocol import calls
from a2a.protocol.params import MessageSendParams

SEND = {
    "message": {
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}, {"kind": "data", "data": {"n": 1}}],
        "messageId": "m-1",
    },
    "configuration": {"acceptedOutputModes": ["text/plain"], "blocking": False},
}


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Only reference counts free anything while the test runs."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_validated_serializer_is_freed_once_unbound(no_collector):
    serializer = MessageSendParams(data=SEND)
    assert serializer.is_valid(), serializer.errors
    data = serializer.validated_data
    gone = weakref.ref(serializer)
    unbind(serializer)
    del serializer
    assert gone() is None
    assert data["message"]["parts"][1]["data"] == {"n": 1}  # what was taken stays whole


def test_without_it_the_serializer_waits_for_the_collector(no_collector):
    """The cycle unbind breaks is there: DRF's fields point back at their serializer."""
    serializer = MessageSendParams(data=SEND)
    assert serializer.is_valid(), serializer.errors
    gone = weakref.ref(serializer)
    del serializer
    assert gone() is not None
    gc.collect()
    assert gone() is None


def test_invalid_params_are_still_reported_whole(monkeypatch, no_collector):
    """unbind runs after the errors were read: a bad call still gets every field's error."""
    made: list[weakref.ref] = []
    original = MessageSendParams.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(MessageSendParams, "__init__", keep)
    bad = {"message": {"role": "robot", "parts": "x", "messageId": 5}}
    error = calls._run("message/send", bad, None)
    assert error.code == -32602
    detail = str(error.data)
    assert "role" in detail and "parts" in detail and "messageId" in detail
    assert made and made[0]() is None  # and it was freed with the call
