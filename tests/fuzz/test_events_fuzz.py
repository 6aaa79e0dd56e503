"""Fuzzing POST /api/events over real HTTP: event names and payloads (JSON, form-encoded,
multipart, plain text), mutated field by field, against tasks parked on events and
triggers, so that some events really wake a task.

The property: 201 with {id, name, woke}, or a 4xx with a JSON body, never 5xx; no
traceback, nothing logged at ERROR; a refused event leaves the database as it was.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a import services
from a2a.conditions import parse_conditions
from a2a.lifecycle import State
from a2a.models import Task
from tests.conftest import AGENT, CLIENT, _to, user_message
from tests.fuzz import support
from tests.fuzz.support import encode, fuzz_settings, strings

pytestmark = [pytest.mark.django_db(transaction=True), support.TIMEOUT]

# Tasks parked on these (one each, made again when an event has woken it).
WAITS = {
    "ci.build.completed:1234": {"onEvent": "ci.build.completed:1234"},
    "deploy.finished": {"trigger": {"event": "deploy.finished", "match": {"env": "prod"}}},
    "deploy.finished/nested": {
        "trigger": {"event": "deploy.finished", "match": {"build.number": 7, "ok": True}}
    },
}
NAMES = ["ci.build.completed:1234", "deploy.finished", "ci.build.completed:999", "x"]


class Parked:
    def __init__(self) -> None:
        self.made: list[str] = []

    def ensure(self) -> None:
        """One task waiting on each of WAITS (a woken one is replaced)."""
        waiting = set(
            Task.objects.filter(pk__in=self.made, state=State.PAUSED_BY_AGENT)
            .values_list("metadata__wait", flat=True)
            .distinct()
        )
        for key, conditions in WAITS.items():
            if key in waiting:
                continue
            task = services.create_task(
                user_message("wait for it"), actor=CLIENT, skill="ci-wait", metadata={"wait": key}
            )
            _to(State.WORKING, task.id)
            services.park_task(
                task.id, actor=AGENT, reason="waiting", conditions=parse_conditions(conditions)
            )
            self.made.append(task.id)


@st.composite
def event_bodies(draw) -> dict[str, Any]:
    body: dict[str, Any] = {"name": draw(st.one_of(st.sampled_from(NAMES), strings))}
    if not support.chance(draw, 4):
        body["payload"] = draw(
            st.one_of(
                st.just({"env": "prod"}),
                st.just({"build": {"number": 7}, "ok": True}),
                st.just({"build.number": 7, "ok": True}),
                support.free_objects,
                support.json_values,
            )
        )
    return body


def _request(draw, keys) -> tuple[bytes, dict[str, str], str]:
    body, notes = draw(event_bodies()), []
    if draw(st.booleans()):
        body, notes = support.mutate(draw, body, max_mutations=2)
    auth = draw(st.sampled_from(["read", "none", "garbage"])) if support.chance(draw, 8) else "full"
    headers = {}
    if auth != "none":
        token = {"full": keys.full, "read": keys.read_only, "garbage": "td_a_b"}[auth]
        headers["Authorization"] = f"Bearer {token}"
    shape = "json"
    if support.chance(draw, 4):
        shape = draw(st.sampled_from(["form", "multipart", "text", "none"]))
    if shape == "json":
        headers["Content-Type"] = "application/json"
        return encode(body), headers, str(notes)
    fields = body if isinstance(body, dict) else {"name": body}
    flat = {str(k): v if isinstance(v, str) else encode(v).decode() for k, v in fields.items()}
    if shape == "form":
        from urllib.parse import urlencode

        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = urlencode({k: v.encode("utf-8", "surrogatepass") for k, v in flat.items()})
        return data.encode(), headers, f"form {notes}"
    if shape == "multipart":
        boundary = uuid.uuid4().hex
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        parts = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n'.encode(
                "utf-8", "surrogatepass"
            )
            + v.encode("utf-8", "surrogatepass")
            + b"\r\n"
            for k, v in flat.items()
            if '"' not in k and "\r" not in k and "\n" not in k
        )
        return parts + f"--{boundary}--\r\n".encode(), headers, f"multipart {notes}"
    if shape == "text":
        headers["Content-Type"] = "text/plain"
    return encode(body), headers, f"{shape} {notes}"


def check_event_answer(answer: support.Exchange, headers) -> bool:
    """Asserts the property; True when the event was refused."""
    assert answer.status < 500, answer.describe()
    support.assert_no_traceback(answer.text)
    if support.refused_by_http_layer(answer, headers):
        return True
    assert answer.content_type.startswith("application/json"), answer.describe()
    body = support.strict_loads(answer.text)
    if answer.status == 201:
        assert set(body) == {"id", "name", "woke"}, body
        assert isinstance(body["woke"], list), body
        return False
    assert 400 <= answer.status < 500, answer.describe()
    assert isinstance(body, dict) and body, answer.describe()
    return True


def test_events(fuzz_server, http, keys):
    parked = Parked()
    guard = support.DbGuard()
    outcomes: dict[int, int] = {}

    @fuzz_settings(150)
    @given(st.data())
    def run(data):
        parked.ensure()
        body, headers, note = _request(data.draw, keys)
        before = guard.before(len(parked.made))
        answer = support.exchange(http, "events", "/api/events", body, headers)
        outcomes[answer.status] = outcomes.get(answer.status, 0) + 1
        support.tally("events", f"HTTP {answer.status}")
        context = f"{note}\nrequest: {body[:500]!r}\nheaders: {headers}\n{answer.describe()}"
        try:
            refused = check_event_answer(answer, headers)
        except AssertionError as exc:
            refused = False
            support.fail(f"{exc}\n{context}")
        if not refused:
            guard.forget()
        elif changes := guard.changed_since(before):
            support.fail(f"a refused event changed the database: {changes}\n{context}")
        if errors := fuzz_server.new_errors():
            support.fail(f"the server logged an error:\n{support.log_summary(errors)}\n{context}")

    run()
    support.report_failures()
    # some events were taken (and woke tasks), some refused
    assert outcomes.get(201, 0) > 10 and outcomes.get(400, 0) > 10, outcomes
