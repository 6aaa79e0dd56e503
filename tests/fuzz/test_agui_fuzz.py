"""Fuzzing POST /agui/run over real HTTP: RunAgentInput bodies (user messages of every
role and shape, resume entries with real and made-up interrupt ids, every status, any
payload), mutated field by field, plus bodies that are not JSON.

The property, for every request: HTTP 200 with an SSE stream of valid AG-UI events, or a
4xx (422 for input that does not parse), never 5xx; no traceback, nothing logged at ERROR,
no RUN_ERROR with code "internal"; a stream starts with RUN_STARTED or is one lone
RUN_ERROR. A refused input (4xx, or a stream holding only RUN_ERROR) leaves the database
exactly as it was. A run that was accepted may change it (a user message starts a task,
a resume answers its interrupts): nothing is asserted about those rows.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from ag_ui.core import Event
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from a2a import services
from a2a.lifecycle import State
from agui.bridge import _thread_key
from agui.models import AguiRun, AguiThread, Interrupt
from tests.conftest import CLIENT, _to, user_message
from tests.fuzz import support
from tests.fuzz.conftest import wait_until
from tests.fuzz.support import Ref, encode, fuzz_settings, strings

pytestmark = [pytest.mark.django_db(transaction=True), support.TIMEOUT]
EVENT = TypeAdapter(Event)
# The states a thread's task is left in: with an open input request, paused (an open pause
# interrupt), parked, running, finished, waiting for auth (no interrupt to answer).
THREAD_KINDS = [
    "input-required",
    "input-required",
    "paused-by-client",
    "paused-by-agent",
    "working",
    "completed",
    "auth-required",
]
APPROVALS = [
    {"decision": "approve"},
    {"decision": {"decision": "reject", "comment": "not now"}},
    {"decision": "maybe"},
    {"decision": "approve", "unknown": 1},
    {},
]


# The fuzz keys' tenant (tests/fuzz/conftest.py): their threads live in its space
FUZZ_KEY_ACTOR = services.Actor("apikey", "fuzz", tenant="key:test-client", restricted=True)


class Threads:
    """AG-UI threads whose task is in a given state (made through the services, as a
    run and the agent would leave them), found again by `thread(kind)`."""

    def __init__(self) -> None:
        self.made: dict[str, str] = {}  # where the bridge keeps a thread -> its threadId

    def thread(self, kind: str) -> AguiThread:
        for thread in (
            AguiThread.objects.filter(thread_id__in=list(self.made))
            .select_related("task")
            .order_by("-created_at")
        ):
            task = thread.task
            if task is None or task.state != kind:
                continue
            if kind in ("input-required", "paused-by-client") and not self.pending(thread):
                continue
            return thread
        public = f"fuzz-{uuid.uuid4()}"
        thread = AguiThread.objects.create(  # kept where the bridge looks for the fuzz key's
            thread_id=_thread_key(public, FUZZ_KEY_ACTOR),
            context_id=str(uuid.uuid4()),
            created_by="fuzz",
        )
        task = services.create_task(
            user_message("fuzz run"), actor=CLIENT, skill="approval", context_id=thread.context_id
        )
        _to(State(kind), task.id)
        thread.task = task
        thread.save(update_fields=["task"])
        self.made[thread.thread_id] = public
        return thread

    @staticmethod
    def pending(thread: AguiThread) -> list[str]:
        return list(
            Interrupt.objects.filter(task__context_id=thread.context_id, pending=True)
            .order_by("interrupt_id")
            .values_list("interrupt_id", flat=True)
        )

    def lookup(self, ref: Ref) -> Any:
        if ref.what == "thread":
            return self.made[self.thread(ref.state).thread_id]
        if ref.what == "interrupt":
            ids = self.pending(self.thread(ref.state))
            return ids[ref.index % len(ids)] if ids else f"input-none-{ref.index}"
        if ref.what == "used-run":
            run = AguiRun.objects.order_by("started_at").values_list("run_id", flat=True).first()
            return run or str(uuid.uuid4())
        raise ValueError(ref)


# --- RunAgentInput bodies ------------------------------------------------------------------

text_content = st.one_of(
    *[st.sampled_from(["Roll out 2.14", "Run the integration suite"])] * 4,
    *[strings] * 3,
    support.huge_string(),
)
user_parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, text_content),
        st.just({"type": "image", "source": {"type": "url", "value": "https://x.example/a.png"}}),
        st.just({"type": "document", "source": {"type": "data", "value": "aGk=", "mimeType": "x"}}),
        st.just({"type": "nope"}),
    ),
    max_size=3,
)


@st.composite
def messages(draw) -> list[dict[str, Any]]:
    """Usually a user message (what a run acts on), sometimes others around it."""
    out: list[dict[str, Any]] = []
    if not support.chance(draw, 8):
        out.append({"id": "m-user", "role": "user", "content": draw(text_content)})
    for i in range(draw(st.integers(0, 2))):
        role = draw(
            st.sampled_from(
                ["user", "user", "user", "assistant", "system", "developer", "tool", "reasoning"]
            )
        )
        message: dict[str, Any] = {"id": f"m{i}", "role": role}
        if role == "user":
            message["content"] = draw(st.one_of(text_content, user_parts))
        elif role == "tool":
            message.update(content="42", toolCallId="call-1")
        else:
            message["content"] = draw(text_content)
        out.append(message)
    return out


@st.composite
def resume_entries(draw, kind: str) -> list[dict[str, Any]]:
    entries = []
    for i in range(draw(st.integers(1, 2))):
        interrupt: Any = Ref("interrupt", kind, i)
        if support.chance(draw, 4):
            interrupt = draw(st.sampled_from(["input-nope-1", ""]) | strings)
        entry: dict[str, Any] = {
            "interruptId": interrupt,
            "status": draw(st.sampled_from(["resolved", "resolved", "cancelled"])),
        }
        if not support.chance(draw, 4):
            entry["payload"] = draw(
                st.one_of(
                    st.sampled_from(APPROVALS),
                    st.sampled_from(APPROVALS),
                    support.mostly_plain,
                    st.none(),
                )
            )
        if support.chance(draw, 8):
            entry["metadata"] = draw(support.free_objects)
        entries.append(entry)
    return entries


@st.composite
def run_inputs(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from([*THREAD_KINDS, "fresh", "weird"]))
    if kind == "fresh":
        thread: Any = f"fuzz-new-{uuid.uuid4()}"
    elif kind == "weird":
        thread = draw(strings)
    else:
        thread = Ref("thread", kind)
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": (
            draw(st.sampled_from([Ref("used-run"), ""]) | strings)
            if support.chance(draw, 4)
            else str(uuid.uuid4())
        ),
        "messages": draw(messages()),
    }
    with_interrupts = kind in ("input-required", "paused-by-client")
    # a thread with open interrupts is mostly resumed; others now and then (refused)
    if kind in THREAD_KINDS and support.chance(draw, 4) != with_interrupts:
        body["resume"] = draw(resume_entries(kind))
    elif support.chance(draw, 8):
        body["resume"] = draw(st.sampled_from([[], None]))
    for key, strategy in (
        ("state", support.mostly_plain),
        ("tools", st.just([{"name": "t", "description": "d", "parameters": {}}])),
        ("context", st.just([{"description": "where", "value": "prod"}])),
        (
            "forwardedProps",
            st.one_of(
                st.builds(
                    lambda s: {"skill": s},
                    st.sampled_from(["approval", "batch", "no-such-skill", ""]),
                ),
                support.mostly_plain,
            ),
        ),
        ("parentRunId", st.just(str(uuid.uuid4()))),
    ):
        if support.chance(draw, 4):
            body[key] = draw(strategy)
    return body


# --- the property --------------------------------------------------------------------------


def _events(answer: support.Exchange) -> list[dict[str, Any]]:
    out = []
    for frame in answer.frames:
        try:
            EVENT.validate_json(frame)
        except ValidationError as exc:
            raise AssertionError(f"not an AG-UI event: {frame[:300]} ({exc})") from None
        out.append(support.strict_loads(frame))
    return out


def check_run_answer(answer: support.Exchange, headers) -> tuple[str, list[dict]]:
    """Asserts the property; returns ("refused" | "accepted", events)."""
    REASONS[_reason(answer)] = REASONS.get(_reason(answer), 0) + 1
    assert answer.status, f"no answer within {STREAM_WAIT} s: the run's stream hangs"
    assert answer.status < 500, answer.describe()
    support.assert_no_traceback(answer.text)
    if support.refused_by_http_layer(answer, headers):
        return "refused", []
    if not answer.stream:
        assert 400 <= answer.status < 500, answer.describe()
        body = support.strict_loads(answer.text)
        assert isinstance(body, dict) and isinstance(body.get("detail"), str), answer.describe()
        if answer.status == 422:
            assert isinstance(body.get("errors"), list), answer.describe()
        return "refused", []
    assert answer.status == 200, answer.describe()
    events = _events(answer)
    assert events, f"an empty stream: {answer.describe()}"
    types = [e["type"] for e in events]
    for e in events:
        if e["type"] == "RUN_ERROR":
            assert e.get("code") != "internal", f"the run failed inside: {e}"
    if types[0] == "RUN_ERROR":
        assert types == ["RUN_ERROR"], f"events after a refusal: {types}"
        assert not answer.timed_out, "a refused run left its stream open"
        return "refused", events
    assert types[0] == "RUN_STARTED", f"a run must start with RUN_STARTED: {types}"
    return "accepted", events


REASONS: dict[str, int] = {}
STREAM_WAIT = 5.0  # a run says RUN_STARTED or RUN_ERROR at once; silence means it hangs


def _reason(answer: support.Exchange) -> str:
    """A short label of the answer (for the tally in a failure message)."""
    if not answer.stream:
        try:
            errors = json.loads(answer.text).get("errors") or [{}]
            return f"HTTP {answer.status} {errors[0].get('type', '')} {errors[0].get('loc', '')}"
        except (ValueError, AttributeError):
            return f"HTTP {answer.status}"
    try:
        first = json.loads(answer.frames[0])
    except (IndexError, ValueError):
        return "stream?"
    return f"{first.get('type')} {first.get('code') or ''}".strip()


def post_run(server, http, guard, threads, body: bytes, headers, note: str) -> str:
    before = guard.before(len(threads.made))
    answer = support.exchange(
        http, "agui", "/agui/run", body, headers, max_frames=2, stream_wait=STREAM_WAIT
    )
    context = f"{note}\nrequest: {body[:600]!r}\nheaders: {headers}\nanswer: {answer.describe()}"
    try:
        verdict, events = check_run_answer(answer, headers)
    except AssertionError as exc:
        verdict, events = "broken", []
        support.fail(f"{exc}\n{context}")
    support.tally("agui", verdict)
    if verdict == "accepted":
        # the stream was dropped early: wait for the server to record how the run ended
        run_id = events[0]["runId"]
        if not wait_until(
            lambda: AguiRun.objects.filter(run_id=run_id).exclude(outcome="").exists()
        ):
            support.fail(f"run {run_id!r} never recorded an outcome\n{context}")
    if verdict != "refused":
        guard.forget()
    elif changes := guard.changed_since(before):
        support.fail(f"a refused run changed the database: {changes}\n{context}")
    errors = server.new_errors()
    if errors:
        support.fail(f"the server logged an error:\n{support.log_summary(errors)}\n{context}")
    return verdict


def _headers(draw, keys) -> dict[str, str]:
    auth = draw(st.sampled_from(["read", "none", "garbage"])) if support.chance(draw, 8) else "full"
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if auth == "full":
        headers["Authorization"] = f"Bearer {keys.full}"
    elif auth == "read":
        headers["Authorization"] = f"Bearer {keys.read_only}"
    elif auth == "garbage":
        headers["Authorization"] = "Bearer td_x_y"
    return headers


# --- the tests -----------------------------------------------------------------------------


def test_run_inputs(fuzz_server, http, keys):
    """RunAgentInput bodies, valid or with 1 to 3 fields broken."""
    threads = Threads()
    guard = support.DbGuard()
    verdicts: dict[str, int] = {}

    @fuzz_settings(200)
    @given(st.data())
    def run(data):
        draw = data.draw
        body, notes = draw(run_inputs()), []
        if draw(st.booleans()):
            body, notes = support.mutate(draw, body, max_mutations=2)
        body = support.resolve(body, threads.lookup)
        headers = _headers(draw, keys)
        verdict = post_run(fuzz_server, http, guard, threads, encode(body), headers, str(notes))
        verdicts[verdict] = verdicts.get(verdict, 0) + 1

    run()
    support.report_failures()
    # the generator reaches both sides: runs that were taken and runs that were refused
    tally = (verdicts, sorted(REASONS.items(), key=lambda kv: -kv[1]))
    assert verdicts.get("accepted", 0) > 10 and verdicts.get("refused", 0) > 10, tally


raw_run_bodies = st.one_of(
    st.binary(max_size=100),
    st.sampled_from(
        [
            b"",
            b"null",
            b"[]",
            b"NaN",
            b'{"threadId": 1e400, "runId": "r", "messages": []}',
            b'{"threadId": "t", "runId": "r", "messages": [], "state": 1e400}',
            b'{"threadId": "t", "runId": "r", "messages": [], "state": NaN}',
            b'{"threadId": "\\ud800", "runId": "r", "messages": []}',
            b'{"threadId": "t\\u0000", "runId": "r", "messages": []}',
            b"[" * 100_000 + b"]" * 100_000,
            b'{"threadId": "t", "runId": "r", "messages": [], "state": '
            + b'{"a":' * 5000
            + b"1"
            + b"}" * 5000
            + b"}",
            b"\xef\xbb\xbf{}",
        ]
    ),
)


def test_run_bodies_that_are_not_run_inputs(fuzz_server, http, keys):
    threads = Threads()
    guard = support.DbGuard()

    @fuzz_settings(60)
    @given(raw_run_bodies, st.data())
    def run(body, data):
        post_run(fuzz_server, http, guard, threads, body, _headers(data.draw, keys), "raw")

    run()
    support.report_failures()


def test_the_generator_resolves_refs():
    body = support.resolve({"a": [Ref("x")]}, lambda ref: ref.what)
    assert body == {"a": ["x"]}
    assert json.loads(encode(body)) == body
