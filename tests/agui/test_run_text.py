"""A run's client gets every agent text of its run exactly once, in order, even when the
agent answered before the run read its opening snapshot (a loaded machine: a worker took
the task right after start_run's commit and the projection projected its text before
`_opening`). The snapshot holds the task's state then, so its deltas are rightly not
replayed, but the text was lost: a chat UI never showed the agent's first message.

The run is held between start_run and its opening read by wrapping `agui.runs._opening`:
the wrapper plays the agent through the services (the suite projects in the writer's call,
after commit) before the real read, and can play more after it. Real database, the real
run stream (`agui.runs._stream`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest
from ag_ui.core import RunAgentInput
from asgiref.sync import async_to_sync

from a2a import services
from agui import runs
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)


def run(thread: str, *, text: str | None = None, resume=None, leave_after=0) -> list[dict]:
    """The events of one run of `thread`, as a client reads them (`leave_after` events,
    then leaves, if given)."""
    body = {
        "threadId": thread,
        "runId": str(uuid.uuid4()),
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": text}] if text else [],
        "tools": [],
        "context": [],
        "forwardedProps": {"skill": "approval"},
    }
    if resume is not None:
        body["resume"] = resume

    async def read() -> list[bytes]:
        stream = runs._stream(RunAgentInput.model_validate(body), CLIENT)
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            if len(chunks) == leave_after:
                await stream.aclose()
                break
        return chunks

    frames = b"".join(async_to_sync(read)()).decode().split("\n\n")
    return [json.loads(f[6:]) for f in frames if f.startswith("data: ")]


def texts(events: list[dict]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


@pytest.fixture
def held_open(monkeypatch) -> Callable[..., None]:
    """`held_open(before, after)`: the runs from now on play `before(task_id)` between
    their start and their opening read, `after(task_id)` right after that read."""
    opening = runs._opening

    def hold(before, after=lambda task_id: None) -> None:

        def held(plan):
            before(plan.task_id)
            try:
                return opening(plan)
            finally:
                after(plan.task_id)

        monkeypatch.setattr(runs, "_opening", held)

    return hold


def asks(task_id: str, words: str) -> None:
    services.start_task(task_id, actor=AGENT)
    services.emit_text(task_id, words, actor=AGENT)
    services.request_input(task_id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)


def test_the_text_of_an_agent_that_answered_before_the_opening_reaches_the_client(held_open):
    thread = f"th-{uuid.uuid4()}"
    held_open(lambda task_id: asks(task_id, "Rolling out 2.14: approve?"))
    events = run(thread, text="Roll out 2.14")
    types = [e["type"] for e in events]
    assert types[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert texts(events) == ["Rolling out 2.14: approve?"]
    start = types.index("TEXT_MESSAGE_START")
    said = ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    assert types[start : start + 3] == said
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"]["type"] == "interrupt"


def test_a_resume_run_relays_the_text_before_and_after_its_opening_once_each(held_open):
    thread = f"th-{uuid.uuid4()}"
    held_open(lambda task_id: asks(task_id, "Approve?"))
    (interrupt,) = run(thread, text="Roll out 2.14")[-1]["outcome"]["interrupts"]

    def after(task_id: str) -> None:
        services.emit_text(task_id, "Done rolling out", actor=AGENT)
        services.complete_task(task_id, actor=AGENT)

    held_open(lambda task_id: services.emit_text(task_id, "Rolling out now", actor=AGENT), after)
    answered = {"decision": {"decision": "approve"}}
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": answered}]
    events = run(thread, resume=resume)
    types = [e["type"] for e in events]
    assert types[:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "ACTIVITY_SNAPSHOT"]
    # the earlier run's text is not sent again; this run's, once each, in order
    assert texts(events) == ["Rolling out now", "Done rolling out"]
    assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1]


def test_a_run_whose_agent_answers_after_the_opening_relays_its_text_once(held_open):
    thread = f"th-{uuid.uuid4()}"
    held_open(lambda task_id: None, lambda task_id: asks(task_id, "Approve?"))
    events = run(thread, text="Roll out 2.14")
    assert texts(events) == ["Approve?"]
    assert events[-1]["outcome"]["type"] == "interrupt"


def test_a_run_that_continues_the_threads_task_relays_only_its_own_text(held_open):
    thread = f"th-{uuid.uuid4()}"

    def works(task_id: str) -> None:
        services.start_task(task_id, actor=AGENT)
        services.emit_text(task_id, "Working on it", actor=AGENT)

    held_open(works)
    first = run(thread, text="Roll out 2.14", leave_after=2)  # the client leaves, task working
    (task_id,) = first[1]["snapshot"]["view"]["tasks"]

    def answers(task_id: str) -> None:
        services.emit_text(task_id, "Rolled out, canary first", actor=AGENT)
        services.complete_task(task_id, actor=AGENT)

    held_open(answers)
    events = run(thread, text="Canary first")
    assert next(iter(events[1]["snapshot"]["view"]["tasks"])) == task_id  # the same task
    # the text from before this run is not sent again; this run's is, once
    assert texts(events) == ["Rolled out, canary first"]
    assert events[-1]["type"] == "RUN_FINISHED"
