"""The dashboard's side of hosted ACP sessions without a host process: the demo launcher
takes a prompt (a hosted agent's is required, never a made-up "Hello") and says which
cards are hosted agents; the task page's message box is for hosted sessions only; the
timeline and the view read a `turn_ended` as idle until the next event.
(tests/runtime/test_acp_host.py drives the same with a real agent under a real host.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from a2a import services
from a2a.lifecycle import State
from a2a.models import Message, Task
from dashboard import timeline
from dashboard.models import AuditEntry
from tests.conftest import AGENT, user_message
from tests.runtime import hosting


@pytest.fixture
def agents(tmp_path) -> Iterator[None]:
    path, _ = hosting.write_agents(tmp_path)
    with hosting.configured(path, {}):
        yield


def test_demo_cards_say_which_agents_are_hosted_and_take_a_prompt(op: Client, agents):
    page = op.get("/demo").content.decode()
    assert 'data-skill="rfc-agent" data-hosted="1"' in page
    assert "Hosted ACP agent “RFC agent”" in page
    assert 'data-skill="approval" data-hosted' not in page
    assert 'id="prompt-rfc-agent"' in page and 'placeholder="e.g. Hello"' in page
    assert ">Roll out release 2.14 to production</textarea>" in page  # a demo's preset


def test_a_hosted_agent_starts_with_the_typed_prompt(op: Client, agents):
    answer = op.post("/demo/start", {"skill": "rfc-agent", "text": "echo typed words"})
    task = Task.objects.get(skill="rfc-agent")
    assert answer.status_code == 302 and answer["Location"] == f"/tasks/{task.id}"
    assert Message.objects.get(task=task).parts == [{"kind": "text", "text": "echo typed words"}]


def test_a_hosted_agent_without_a_prompt_is_refused_and_audited(op: Client, agents, unchanged):
    with unchanged():
        answer = op.post("/demo/start", {"skill": "rfc-agent", "text": "   "}, follow=True)
    assert "Type a first message for the agent." in answer.content.decode()
    assert AuditEntry.objects.filter(action="start", outcome="refused").count() == 1


def test_a_demo_agent_may_start_with_its_preset_or_a_typed_prompt(op: Client):
    op.post("/demo/start", {"skill": "approval", "text": ""})
    op.post("/demo/start", {"skill": "approval", "text": "Ship 2.15"})
    firsts = [
        Message.objects.get(task=t, seq=1).parts[0]["text"]
        for t in Task.objects.order_by("created_at")
    ]
    assert firsts == ["Roll out release 2.14 to production", "Ship 2.15"]


def test_the_message_box_is_for_hosted_sessions_only(op: Client, make_task, unchanged):
    task = make_task(State.WORKING)
    assert 'id="message-text"' not in op.get(f"/tasks/{task.id}").content.decode()
    with unchanged():
        answer = op.post(f"/tasks/{task.id}/message", {"text": "hello"})
    assert answer.status_code == 409
    assert "only a hosted ACP agent" in answer.content.decode()
    refused = AuditEntry.objects.get(action="message")
    assert (refused.outcome, refused.task_id) == ("refused", task.id)
    with unchanged():
        assert op.post("/tasks/nope/message", {"text": "hello"}).status_code == 404


def view_entry(task_id: str) -> dict:
    from agui import selectors

    return selectors.snapshot([task_id])["view"]["tasks"][task_id]


def test_turn_ended_is_idle_until_the_next_event(op: Client, agents):
    task = services.create_task(user_message("echo a"), actor=AGENT, skill="rfc-agent")
    services.start_task(task.id, actor=AGENT)
    services.note_turn_ended(task.id, actor=AGENT, consumed=1)
    detail = timeline.build(task.id)
    assert detail.idle_since is not None
    assert view_entry(task.id)["idleSince"] is not None  # the board's row says it too
    assert detail.entries[-1].title == "Turn ended: waiting for the next message"
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Idle — waiting for your next message" in page and 'id="message-text"' in page
    # a message waiting past what the host prompted: not idle, nothing written
    services.add_message(task.id, user_message("echo b"), actor=AGENT)
    assert timeline.build(task.id).idle_since is None
    assert view_entry(task.id)["idleSince"] is None
    assert services.note_turn_ended(task.id, actor=AGENT, consumed=1) is None
    assert timeline.build(task.id).idle_since is None
    assert services.note_turn_ended(task.id, actor=AGENT, consumed=2) is not None
    services.pause_task(task.id, actor=AGENT, reason="hold")
    assert timeline.build(task.id).idle_since is None  # paused says so itself
    assert services.note_turn_ended(task.id, actor=AGENT, consumed=2) is None


def test_an_answer_to_its_question_is_no_waiting_prompt(agents, transactional_db):
    from tests.conftest import APPROVAL_REQUEST, answer

    task = services.create_task(user_message("echo a"), actor=AGENT, skill="rfc-agent")
    services.start_task(task.id, actor=AGENT)
    services.request_input(task.id, actor=AGENT, explanation="May I?", request=APPROVAL_REQUEST)
    answer(Task.objects.get(pk=task.id), {"decision": "approve"})
    assert services.note_turn_ended(task.id, actor=AGENT, consumed=1) is not None
    assert timeline.build(task.id).idle_since is not None


def test_an_idle_stop_keeps_the_idle_and_other_notes_end_it(op: Client, agents):
    """The host stopping an idle agent's process changes nothing the user waits for: the
    board and the page still say idle, and the timeline says what happened."""
    task = services.create_task(user_message("echo a"), actor=AGENT, skill="rfc-agent")
    services.start_task(task.id, actor=AGENT)
    services.note_turn_ended(task.id, actor=AGENT, consumed=1)
    idle = timeline.build(task.id).idle_since
    services.note_host(task.id, actor=AGENT, what="idle_stopped", detail="idle for 300 s")
    detail = timeline.build(task.id)
    assert detail.idle_since == idle and view_entry(task.id)["idleSince"] is not None
    assert detail.entries[-1].title.startswith("Stopped the idle agent's process")
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Idle — waiting for your next message" in page
    services.note_host(task.id, actor=AGENT, what="exited", detail="exited with code 1")
    assert timeline.build(task.id).idle_since is None
    assert view_entry(task.id)["idleSince"] is None


def test_always_allow_is_a_choice_in_the_inbox_and_its_answer_is_audited(op: Client, agents):
    """A hosted agent's permission that offers "always" options: the inbox card has
    "Remember for this session" (No by default); Yes is in the answer and the audit."""
    from acp import schema as s

    from a2a.acp_host.permissions import answer_to_outcome, as_input_request
    from a2a.selectors import input_answer
    from agui.models import Interrupt

    options = [
        s.PermissionOption(option_id="once", name="Allow", kind="allow_once"),
        s.PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
        s.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
    ]
    call = s.ToolCallUpdate(tool_call_id="c1", title="Edit src/a.py", kind="edit")
    task = services.create_task(user_message("echo a"), actor=AGENT, skill="rfc-agent")
    services.start_task(task.id, actor=AGENT)
    request = as_input_request(call, options)
    explanation = request.pop("explanation")
    asked = services.request_input(task.id, actor=AGENT, explanation=explanation, request=request)
    interrupt = Interrupt.objects.get(request_id=asked["requestId"])
    html = op.get("/inbox").content.decode()
    assert "Remember for this session" in html and "“Always allow”" in html
    assert "later requests for edit tool calls" in html
    assert 'name="v.remember" value="false" checked' in html
    op.post(f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve", "v.remember": "true"})
    answered = input_answer(task.id, asked["requestId"])
    assert answered["values"]["remember"] is True
    assert answer_to_outcome(answered, options).outcome.option_id == "always"
    audit = AuditEntry.objects.get(task_id=task.id, action="answer")
    assert "remember=true" in audit.reason + audit.detail
