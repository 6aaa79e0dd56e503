"""Hosted ACP agents (a2a/acp_host): real agents in real processes, held by a real
supervisor (`manage.py run_acp_host`), on the suite's database (SQLite, or PostgreSQL +
Redis in the PostgreSQL run).

Peers: tests/runtime/peers/rfc_agent.py, written with the official Python SDK, implements
the seed's suspend RFC (supportsSuspend, supportsAwaitResumption, session/load and
session/resume); @agentclientprotocol/sdk@1.9.0's example agent (npm, `make acp-peers`)
is a standard agent with tool calls and permission requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from a2a import services
from a2a.acp_door.models import AcpSession
from a2a.acp_host.models import HostedSession
from a2a.conditions import parse_conditions
from a2a.event_kinds import EventKind
from a2a.formats import text_of
from a2a.input_requests import RESPONSE_TYPE
from a2a.lifecycle import TERMINAL, State
from a2a.models import Message, Suspension, Task, TaskEvent
from a2a.runtime.models import RunLease
from a2a.runtime.settle import settled, until_settled
from a2a.validation import ValidationFailed
from tests.acp_door.peer import says
from tests.conftest import CLIENT, user_message
from tests.runtime import hosting
from tests.runtime.conftest import STARTUP_SECONDS, Processes, wait_for, wait_state

OPERATOR = services.Actor("user", "operator")

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class Host:
    procs: Processes
    state_dir: Path
    supervisors: list

    def start_supervisor(self):
        """A supervisor, returned once it serves (its start-up is not a test's to wait)."""
        proc = self.procs._spawn("acp-host", "run_acp_host")
        self.supervisors.append(proc)
        return self.procs.wait_serving(proc, ": agents ")

    def replace_supervisor(self) -> None:
        """SIGKILL the oldest supervisor (no goodbye: its holds lapse) and start another."""
        first = self.supervisors.pop(0)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=20)
        self.start_supervisor()

    def prompts(self) -> list[str]:
        log = self.state_dir / "prompts.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(scope="module")
def host(runtime: Processes, tmp_path_factory) -> Iterator[Host]:
    path, state_dir = hosting.write_agents(tmp_path_factory.mktemp("acp-host"))
    fast = {"TASKDECK_ACP_LEASE_SECONDS": "2", "TASKDECK_ACP_MAX_TURN_BYTES": "200000"}
    runtime.env.update(fast)
    with hosting.configured(path, runtime.env):
        # every process of a deployment reads the same configuration: the scheduler must
        # know these skills are the supervisors' (it would queue their runs for a worker)
        runtime.kill(runtime.scheduler, signal.SIGTERM)
        runtime.start_scheduler(wait=False)  # starts while the supervisor does
        h = Host(procs=runtime, state_dir=state_dir, supervisors=[])
        h.start_supervisor()
        try:
            yield h
        finally:
            for proc in h.supervisors:
                proc.terminate()
            for proc in h.supervisors:
                proc.wait(timeout=20)
            for key in fast:
                runtime.env.pop(key)
            runtime.kill(runtime.scheduler, signal.SIGTERM)
    runtime.start_scheduler(wait=False)


@pytest.fixture
def hosted(host: Host) -> Iterator:
    """hosted("rfc-agent", "echo hi") -> a new task of that hosted agent. Teardown cancels
    what is still open and waits until its supervisor let it go."""
    made: list[str] = []

    def make(skill: str, text: str) -> Task:
        task = services.create_task(
            user_message(text), actor=CLIENT, skill=skill, metadata={"skill": skill}
        )
        made.append(task.id)
        return task

    yield make
    for task_id in made:
        if Task.objects.filter(pk=task_id).exclude(state__in=list(TERMINAL)).exists():
            services.cancel_task(task_id, actor=CLIENT, reason="test teardown")
    for task_id in made:
        wait_for(
            lambda t=task_id: (
                not HostedSession.objects.filter(task_id=t).exclude(holder="").exists()
            ),
            20,
            "the supervisor to let the session go",
        )


def agent_texts(task_id: str) -> list[str]:
    return [
        text_of(m.parts)
        for m in Message.objects.filter(task_id=task_id, role="agent").order_by("seq")
    ]


def wait_text(task_id: str, text: str, timeout: float = 30) -> list[str]:
    try:
        return wait_for(
            lambda: (t := agent_texts(task_id)) and any(text in x for x in t) and t,
            timeout,
            f"the agent to say {text!r}",
        )
    except AssertionError as exc:  # what it said by then, not when the wait began
        raise AssertionError(f"{exc} (said {agent_texts(task_id)})") from None


def kinds(task_id: str) -> list[str]:
    return list(
        TaskEvent.objects.filter(task_id=task_id).order_by("id").values_list("kind", flat=True)
    )


def say(task_id: str, text: str) -> None:
    services.add_message(task_id, user_message(text), actor=CLIENT)


def turn_over(task_id: str) -> bool:
    return settled(task_id) and not HostedSession.objects.get(task_id=task_id).turn_open


# ----- a turn, recorded -------------------------------------------------------------------


def test_a_prompt_is_one_turn_and_its_answer_an_agent_message(hosted, host):
    task = hosted("rfc-agent", "echo hello from Taskdeck")
    assert wait_text(task.id, "hello from Taskdeck") == ["hello from Taskdeck"]
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    assert Task.objects.get(pk=task.id).state == State.WORKING  # a session waits for more
    row = HostedSession.objects.get(task_id=task.id)
    assert row.session_id and row.holder
    lines = [line for line in host.prompts() if row.session_id in line]
    assert len(lines) == 1 and lines[0].endswith("echo hello from Taskdeck")
    # a second message is the session's second prompt, in the same ACP session
    say(task.id, "echo and again")
    wait_text(task.id, "and again")
    assert len([line for line in host.prompts() if row.session_id in line]) == 2


def test_tool_calls_plan_and_resources_are_recorded_in_order(hosted):
    task = hosted("rfc-agent", "tools")
    wait_text(task.id, "tools done")
    events = list(TaskEvent.objects.filter(task_id=task.id).order_by("id"))
    tools = [e.data for e in events if e.kind == EventKind.TOOL_CALL]
    assert [t["status"] for t in tools] == ["pending", "in_progress", "completed"]
    assert tools[0]["title"] == "Read README" and tools[0]["kind"] == "read"
    assert tools[2]["content"] == "42 lines"
    assert Task.objects.get(pk=task.id).progress == {"done": 1, "total": 2}
    artifact = Task.objects.get(pk=task.id).artifacts.get()
    assert artifact.name == "report.txt" and artifact.parts == [
        {"kind": "text", "text": "report body"}
    ]
    output = (EventKind.TOOL_CALL, EventKind.ARTIFACT_ADDED, EventKind.MESSAGE_ADDED,
              EventKind.PROGRESS)  # fmt: skip
    order = [e.kind for e in events if e.kind in output]
    assert order.index(EventKind.ARTIFACT_ADDED) > order.index(EventKind.PROGRESS)
    assert order[-1] == EventKind.MESSAGE_ADDED  # "tools done" came last


# ----- permission requests ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "decision", "option"),
    [("ask", "approve", "allow"), ("ask", "reject", "reject"), ("ask meta", "approve", "allow")],
)
def test_a_permission_request_is_answered_from_the_inbox(hosted, prompt, decision, option):
    task = hosted("rfc-agent", prompt)
    wait_state(task.id, State.INPUT_REQUIRED)
    request = Task.objects.get(pk=task.id).input_request
    assert request["title"] == "Allow: Delete build/"
    assert request["fields"][0]["type"] == "approval"
    # a bad answer is refused and the agent keeps waiting
    with pytest.raises(Exception, match="decision"):
        services.provide_input(task.id, _answer(request, {"decision": "maybe"}), actor=OPERATOR)
    assert Task.objects.get(pk=task.id).state == State.INPUT_REQUIRED
    services.provide_input(task.id, _answer(request, {"decision": decision}), actor=OPERATOR)
    wait_text(task.id, f"permission: {option}")
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")


def _answer(request: dict, values: dict) -> services.IncomingMessage:
    data = {"type": RESPONSE_TYPE, "requestId": request["requestId"], "values": values}
    return services.IncomingMessage(
        message_id=str(uuid.uuid4()), parts=[{"kind": "data", "data": data}]
    )


def test_a_message_sent_during_a_turn_is_prompted_after_a_permission_answer(hosted, host):
    task = hosted("rfc-agent", "ask")
    wait_state(task.id, State.INPUT_REQUIRED)
    request = Task.objects.get(pk=task.id).input_request
    services.provide_input(task.id, _answer(request, {"decision": "approve"}), actor=OPERATOR)
    say(task.id, "echo queued meanwhile")  # while the turn still runs
    said = wait_text(task.id, "queued meanwhile")
    assert said[-2:] == ["permission: allow", "queued meanwhile"]
    session = HostedSession.objects.get(task_id=task.id).session_id
    prompts = [line.split(" ", 2)[2] for line in host.prompts() if session in line]
    assert prompts == ["ask", "echo queued meanwhile"]  # the answer itself is no prompt


def test_messages_that_arrive_together_are_each_prompted_in_order(hosted, host):
    """Two messages counted before the session looks (here: in one transaction, as when
    they arrive during a turn, or between the session's read of its task and its claim
    of the run lease): each is a prompt of its own, and a blocking send of the second
    returns only after its turn (the first turn serves only the first message)."""
    task = hosted("rfc-agent", "echo first")
    wait_text(task.id, "first")
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    with transaction.atomic():
        say(task.id, "echo second")
        say(task.id, "echo third")
    assert asyncio.run(until_settled(task.id, 30)) is True
    assert agent_texts(task.id) == ["first", "second", "third"]
    session = HostedSession.objects.get(task_id=task.id).session_id
    prompts = [line.split(" ", 2)[2] for line in host.prompts() if session in line]
    assert prompts == ["echo first", "echo second", "echo third"]


def test_a_message_not_handed_over_is_prompted_though_its_wakeup_was_counted_served(hosted):
    """A lease that says every wakeup was served while a message waits (as a claim that
    counted a message landing just before it, but found nothing to prompt, left it before
    the fix): the message is still the agent's next prompt."""
    task = hosted("rfc-agent", "echo first")
    wait_text(task.id, "first")
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    with transaction.atomic():
        say(task.id, "echo late")
        RunLease.objects.filter(task_id=task.id).update(served=F("wakeups"))
    assert wait_text(task.id, "late") == ["first", "late"]


def test_an_agent_that_dies_while_asking_ends_the_task_and_withdraws_the_question(hosted, host):
    task = hosted("rfc-agent", "ask")
    wait_state(task.id, State.INPUT_REQUIRED)
    session = HostedSession.objects.get(task_id=task.id).session_id
    pid = int(next(line for line in host.prompts() if session in line).split()[0])
    os.kill(pid, signal.SIGKILL)
    wait_state(task.id, State.CANCELED)
    event = TaskEvent.objects.get(task_id=task.id, kind=EventKind.CANCELED)
    assert "exited with code -9 (killed by SIGKILL) during a turn" in event.reason
    assert event.data["withdrawnRequestId"].startswith("req-")  # the inbox question is gone


def idle_since(task_id: str) -> str | None:
    from agui.models import ViewTask

    row = ViewTask.objects.filter(task_id=task_id).values_list("entry", flat=True).first()
    return (row or {}).get("idleSince")


def test_between_turns_it_is_idle_and_the_dashboard_sends_its_next_message(
    hosted, django_user_model
):
    """After a turn the session waits: the live view and the task page say "Idle —
    waiting for your next message" rather than "Working"; the page's message box sends
    the next prompt through the services (audited; a viewer's is refused), and the new
    turn ends idle again."""
    from django.test import Client

    from dashboard import roles
    from dashboard.models import AuditEntry
    from tests.dashboard.conftest import make_user

    task = hosted("rfc-agent", "echo first words")
    wait_text(task.id, "first words")
    wait_for(lambda: idle_since(task.id), 20, "the view to say the session is idle")
    assert Task.objects.get(pk=task.id).state == State.WORKING  # idle is not a state
    op, viewer = Client(), Client()
    op.force_login(make_user(django_user_model, "ana", roles.OPERATORS))
    viewer.force_login(make_user(django_user_model, "vic", roles.VIEWERS))
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Idle — waiting for your next message" in page
    assert "Working · idle" in page and 'id="message-text"' in page
    assert 'id="message-text"' not in viewer.get(f"/tasks/{task.id}").content.decode()

    assert viewer.post(f"/tasks/{task.id}/message", {"text": "echo sneaky"}).status_code == 403
    answer = op.post(f"/tasks/{task.id}/message", {"text": "echo second words"})
    assert answer.status_code == 302
    assert idle_since(task.id) is None  # the message ends the idle at once
    wait_text(task.id, "second words")
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, kind=EventKind.TURN_ENDED).count() == 2,
        20, "the second turn to end idle",
    )  # fmt: skip
    assert "sneaky" not in " ".join(agent_texts(task.id))
    assert AuditEntry.objects.filter(task_id=task.id, action="message", outcome="ok").count() == 1
    assert (
        AuditEntry.objects.filter(task_id=task.id, action="message", outcome="refused").count() == 1
    )
    blank = op.post(f"/tasks/{task.id}/message", {"text": "  "})
    assert blank.status_code == 400 and "This field is required" in blank.content.decode()


def test_an_agent_that_never_answers_initialize_fails_its_task_once(hosted):
    task = hosted("mute", "hello?")
    wait_state(task.id, State.FAILED, timeout=20)
    reason = TaskEvent.objects.get(task_id=task.id, kind=EventKind.FAILED).reason
    assert "did not answer initialize within 1 s" in reason
    notes = TaskEvent.objects.filter(task_id=task.id, kind=EventKind.HOST_NOTE)
    assert notes.count() == 1  # started once, not again and again


def test_an_agent_killed_while_starting_says_how_and_what_it_said(hosted):
    """Not "AgentGone: ": the task's failure names the signal and its stderr's last lines."""
    task = hosted("dies-at-start", "hello?")
    wait_state(task.id, State.FAILED, timeout=20)
    reason = TaskEvent.objects.get(task_id=task.id, kind=EventKind.FAILED).reason
    assert "the agent could not be started: its process exited with code -9 (killed by " in (reason)
    assert "SIGKILL" in reason and "the last lines of its stderr: out of memory" in reason
    assert "AgentGone" not in reason


def test_cancel_while_the_agent_waits_for_permission_tells_it_cancelled(hosted):
    task = hosted("rfc-agent", "ask")
    wait_state(task.id, State.INPUT_REQUIRED)
    services.cancel_task(task.id, actor=CLIENT, reason="not today")
    wait_for(
        lambda: not HostedSession.objects.filter(task_id=task.id).exclude(holder="").exists(),
        20,
        "the session to end",
    )
    assert Task.objects.get(pk=task.id).state == State.CANCELED


# ----- pause and resume ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["interrupt_immediate", "finish_step", "wait_for_completion"])
def test_a_pause_suspends_an_rfc_agent_in_its_mode_and_a_resume_carries_input(hosted, mode):
    task = hosted("rfc-agent", "slow 25")
    wait_text(task.id, "tick 1")
    services.pause_task(task.id, actor=OPERATOR, reason="release freeze", mode=mode)
    wait_for(
        lambda: HostedSession.objects.get(task_id=task.id).agent_handle.startswith("rfc-"),
        20, "the agent to answer session/suspend with its handle",
    )  # fmt: skip
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    assert HostedSession.objects.get(task_id=task.id).capabilities["supportsSuspend"] is True
    before = "".join(agent_texts(task.id))
    if mode == "wait_for_completion":  # the turn ran to its end, its output written
        assert "tick 25" in before and "suspended wait_for_completion" in before
    else:  # stopped at once or after its tick: what it said since is held until the resume
        assert "tick 25" not in before and "suspended" not in before
    services.resume_task(
        task.id, actor=OPERATOR, resume_input={"note": "go on"}, continue_transcript=False
    )
    said = wait_text(task.id, 'resumed input={"note": "go on"} continueTranscript=false')
    assert f"suspended {mode}" in "".join(said)
    assert "tick 25" not in "".join(said) or mode == "wait_for_completion"


def test_a_standard_agent_paused_with_interrupt_immediate_loses_its_turn_and_says_so(hosted):
    task = hosted("acp-example", "Hello, agent")
    wait_for(lambda: agent_texts(task.id), 30, "the example agent to begin")
    services.pause_task(task.id, actor=OPERATOR, reason="stop", mode="interrupt_immediate")
    wait_for(lambda: turn_over(task.id), 20, "the cancelled turn to end")
    note = TaskEvent.objects.get(task_id=task.id, kind=EventKind.HOST_NOTE)
    assert note.data["what"] == "cancelled_turn" and "work is lost" in note.data["detail"]
    services.resume_task(task.id, actor=OPERATOR)
    wait_state(task.id, State.WORKING)
    assert not TaskEvent.objects.filter(task_id=task.id, kind=EventKind.INPUT_REQUESTED).exists()


def test_a_standard_agent_paused_with_finish_step_holds_its_output_until_resumed(hosted):
    task = hosted("acp-example", "Hello, agent")
    wait_for(lambda: agent_texts(task.id), 30, "the example agent to begin")
    services.pause_task(task.id, actor=OPERATOR, reason="hold", mode="finish_step")
    first = agent_texts(task.id)
    # its turn goes on (its tool call is on the timeline) but its words are held
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, kind=EventKind.TOOL_CALL,
                                         data__status="completed").exists(),
        30, "the example's first tool call to complete",
    )  # fmt: skip
    assert agent_texts(task.id) == first
    assert Task.objects.get(pk=task.id).state == State.PAUSED_BY_CLIENT
    services.resume_task(task.id, actor=OPERATOR)
    wait_text(task.id, "Now I understand the project structure")
    wait_state(task.id, State.INPUT_REQUIRED)  # its permission request, asked after the resume


# ----- the agent parks itself ---------------------------------------------------------------


def _park(hosted, conditions: dict) -> Task:
    task = hosted("rfc-agent", "park " + json.dumps(conditions))
    wait_state(task.id, State.PAUSED_BY_AGENT)
    s = Task.objects.get(pk=task.id).current_suspension
    assert s.reason == "waiting as asked" and s.summary == "parked by rfc_agent"
    assert s.conditions == parse_conditions(conditions).as_dict()
    wait_for(lambda: turn_over(task.id), 20, "the parking turn to end")
    assert agent_texts(task.id) == []  # a parked task takes no output: held until woken
    return task


def _woken(task: Task) -> list[str]:
    """What the agent said once woken: its held "parked <Taskdeck's handle>", then what it
    said on hearing session/resume."""
    said = wait_text(task.id, "resumed input=")
    handle = Suspension.objects.get(task_id=task.id).handle
    assert said[0] == f"parked {handle}"
    return said


def test_self_park_is_woken_by_an_event(hosted):
    task = _park(hosted, {"onEvent": "ci.done"})
    services.emit_event("ci.done", {"ok": True}, actor=OPERATOR)
    wait_state(task.id, State.WORKING)
    # the event is the resume's input (as for tasks/await_resumption)
    said = _woken(task)[-1]
    assert said == 'resumed input={"event": "ci.done", "payload": {"ok": true}} ' + (
        "continueTranscript=true"
    )
    s = Suspension.objects.filter(task_id=task.id).get()
    assert s.cause == Suspension.Cause.EXTERNAL_EVENT


def test_self_park_is_woken_by_a_trigger(hosted):
    task = _park(hosted, {"trigger": {"event": "deploy", "match": {"env": "prod"}}})
    services.emit_event("deploy", {"env": "staging"}, actor=OPERATOR)
    services.emit_event("deploy", {"env": "prod"}, actor=OPERATOR)
    _woken(task)
    assert Suspension.objects.get(task_id=task.id).cause == Suspension.Cause.CONDITION_FIRED


def test_self_park_is_woken_by_its_timeout_with_its_input(hosted, host):
    task = _park(hosted, {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_input",
                                      "input": {"waited": True}}})  # fmt: skip
    # five minutes pass (the scheduler fires what is due)
    Suspension.objects.filter(task_id=task.id).update(
        deadline=timezone.now() - timedelta(seconds=1)
    )
    assert _woken(task)[-1] == 'resumed input={"waited": true} continueTranscript=true'
    assert Suspension.objects.get(task_id=task.id).cause == Suspension.Cause.TIMEOUT


@pytest.mark.parametrize(
    ("prompt", "field"),
    [
        ('park {"timeout": {"durationMinutes": -1}}', "durationMinutes"),  # bad conditions
        ('parkblank {"onEvent": "ci.done"}', "reason"),  # no reason
    ],
)
def test_a_bad_park_is_refused_and_changes_nothing(hosted, prompt, field):
    task = hosted("rfc-agent", prompt)
    said = wait_text(task.id, "park refused")
    assert "-32602" in said[-1] and field in said[-1]
    assert Task.objects.get(pk=task.id).state == State.WORKING
    assert not Suspension.objects.filter(task_id=task.id).exists()


# ----- faults -------------------------------------------------------------------------------


def test_an_agent_that_crashes_mid_turn_fails_the_task_and_says_why(hosted):
    task = hosted("rfc-agent", "crash")
    wait_state(task.id, State.FAILED)
    t = Task.objects.get(pk=task.id)
    assert "exited with code 3 during a turn" in text_of(t.status_message.parts) or any(
        "exited with code 3" in (e.reason or "") for e in TaskEvent.objects.filter(task_id=task.id)
    )
    assert "about to crash" in agent_texts(task.id)  # what it said before is kept
    notes = TaskEvent.objects.filter(task_id=task.id, kind=EventKind.HOST_NOTE)
    assert notes.filter(data__what="exited").exists()


def test_a_flooding_agent_is_cut_off_at_the_turn_limit(hosted):
    task = hosted("rfc-agent", "flood 400")  # 400 kB, the limit is 200 kB here
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, data__what="output_limit").exists(),
        30, "the output limit",
    )  # fmt: skip
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    written = sum(len(t) for t in agent_texts(task.id))
    assert written <= 200_000
    say(task.id, "echo still here")  # the session goes on
    wait_text(task.id, "still here")


def test_garbage_on_the_agents_stdout_does_not_stop_the_session(hosted):
    task = hosted("rfc-agent", "garbage")
    wait_text(task.id, "after garbage")


def test_a_line_that_breaks_the_connection_stops_the_agent_and_fails_its_turn(hosted):
    task = hosted("rfc-agent", "notanobject")
    wait_state(task.id, State.FAILED)
    reason = TaskEvent.objects.get(task_id=task.id, kind=EventKind.FAILED).reason
    assert "connection to the agent broke" in reason and "stopped during a turn" in reason


def test_a_killed_supervisor_is_replaced_and_no_prompt_is_sent_twice(hosted, host):
    task = hosted("rfc-agent", "slow 200")
    wait_text(task.id, "tick 1")
    row = HostedSession.objects.get(task_id=task.id)
    host.replace_supervisor()  # mid-turn
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, data__what="takeover").exists(),
        30, "another supervisor to take the session over",
    )  # fmt: skip
    notes = [
        e.data["what"] for e in TaskEvent.objects.filter(task_id=task.id, kind=EventKind.HOST_NOTE)
    ]
    assert "turn_lost" in notes
    say(task.id, "echo after the takeover")
    wait_text(task.id, "after the takeover")
    lines = [line for line in host.prompts() if row.session_id in line]
    assert [line.split(" ", 2)[2] for line in lines] == ["slow 200", "echo after the takeover"]
    assert HostedSession.objects.get(task_id=task.id).session_id == row.session_id


def test_a_permission_left_open_by_a_killed_supervisor_is_asked_again_and_answered(hosted, host):
    """The agent's request died with the supervisor (and its process): the next holder
    takes the session up, withdraws the question and asks it again; an answer to the old
    one is refused and changes nothing; the new one's answer reaches the agent."""
    task = hosted("rfc-agent", "ask")
    wait_state(task.id, State.INPUT_REQUIRED)
    stale = Task.objects.get(pk=task.id).input_request
    session = HostedSession.objects.get(task_id=task.id).session_id
    host.replace_supervisor()
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, data__what="asked_again").exists(),
        60, "the question to be asked again",
    )  # fmt: skip
    fresh = Task.objects.get(pk=task.id).input_request
    assert fresh["requestId"] != stale["requestId"]
    assert (fresh["title"], fresh["fields"]) == ("Allow: Delete build/", stale["fields"])
    asked = TaskEvent.objects.filter(task_id=task.id, kind=EventKind.INPUT_REQUESTED)
    assert asked.last().data["withdrawnRequestId"] == stale["requestId"]
    notes = {e.data["what"]: e.data["detail"] for e in
             TaskEvent.objects.filter(task_id=task.id, kind=EventKind.HOST_NOTE)}  # fmt: skip
    assert {"turn_lost", "takeover", "asked_again"} <= set(notes)
    assert stale["requestId"] in notes["asked_again"] and fresh["requestId"] in notes["asked_again"]
    # the withdrawn question's answer: refused, saying which one to answer; nothing changes
    with pytest.raises(ValidationFailed, match="withdrawn") as refused:
        services.provide_input(task.id, _answer(stale, {"decision": "approve"}), actor=OPERATOR)
    assert fresh["requestId"] in str(refused.value.errors)
    assert Task.objects.get(pk=task.id).input_request == fresh
    services.provide_input(task.id, _answer(fresh, {"decision": "approve"}), actor=OPERATOR)
    assert wait_text(task.id, "permission: allow (asked again)")[-1] == (
        "permission: allow (asked again)"
    )
    wait_for(lambda: turn_over(task.id), 20, "the answer's turn to end")
    prompts = [line.split(" ", 2)[2] for line in host.prompts() if session in line]
    assert prompts[0] == "ask" and len(prompts) == 2  # the cut-off prompt is not sent again
    assert "'Delete build/'" in prompts[1] and "Allow (allow_once)" in prompts[1]
    assert HostedSession.objects.get(task_id=task.id).session_id == session  # resumed
    assert Task.objects.get(pk=task.id).state == State.WORKING


@pytest.mark.parametrize(
    ("skill", "what", "detail"),
    [
        ("rfc-load", "takeover", "session/load"),  # offers load only: its replay is muted
        # offers resume but kept its sessions in memory: refused, so a new session
        ("rfc-forgetful", "new_session", "refused to take the session up (-32002"),
    ],
)
def test_a_takeover_between_turns_keeps_the_conversation_recorded_once(
    hosted, host, skill, what, detail
):
    task = hosted(skill, "echo first")
    wait_text(task.id, "first")
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    host.replace_supervisor()
    say(task.id, "echo second")
    assert wait_text(task.id, "second") == ["first", "second"]  # the replay is not recorded
    note = TaskEvent.objects.get(task_id=task.id, data__what=what)
    assert detail in note.data["detail"]


# ----- a standard agent: @agentclientprotocol/sdk's example --------------------------------


def test_the_sdk_example_agent_runs_as_a_skill_with_its_permission_answered(hosted):
    """The npm SDK's own example, unchanged: tool calls, then a permission request."""
    if not hosting.example_installed():
        pytest.fail("the npm example agent is missing: run `make acp-peers`")
    task = hosted("acp-example", "Hello, agent")
    wait_state(task.id, State.INPUT_REQUIRED, timeout=40)
    request = Task.objects.get(pk=task.id).input_request
    services.provide_input(task.id, _answer(request, {"decision": "approve"}), actor=OPERATOR)
    wait_for(lambda: turn_over(task.id) and agent_texts(task.id), 40, "the example's turn to end")
    assert TaskEvent.objects.filter(task_id=task.id, kind=EventKind.TOOL_CALL).exists()
    assert Task.objects.get(pk=task.id).state == State.WORKING
    assert RunLease.objects.get(task_id=task.id).owner == ""


# ----- an editor drives a hosted agent through the ACP door ------------------------------


def test_an_editor_sees_a_hosted_agents_tool_calls_and_plan(host, open_peer, acp_key):
    """`manage.py acp` (a standard client: the SDK checks every update against its schema)
    drives a task of the hosted RFC agent: its tool call, as it announced and updated it,
    and its plan reach the editor."""
    agents = {"TASKDECK_ACP_AGENTS": host.procs.env["TASKDECK_ACP_AGENTS"]}
    with open_peer(acp_key, **agents) as peer:
        sid = peer.new_session("/work/project", mode="rfc-agent")
        try:
            answer = peer.prompt(sid, "tools")
            assert answer["stopReason"] == "end_turn"
            seen = peer.seen(sid)
        finally:
            task_id = AcpSession.objects.get(pk=sid).task_id
            services.cancel_task(task_id, actor=CLIENT, reason="test teardown")
    calls = [u for u in seen if str(u.get("toolCallId")).startswith(f"tool-{task_id}-")]
    assert [(u["sessionUpdate"], u.get("status")) for u in calls] == [
        ("tool_call", "pending"), ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
    ]  # fmt: skip
    assert (calls[0]["title"], calls[0]["kind"]) == ("Read README", "read")
    assert calls[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "42 lines"}}
    ]
    plans = [u for u in seen if u["sessionUpdate"] == "plan"]
    assert plans == [{"sessionUpdate": "plan", "entries": [
        {"content": "read", "priority": "high", "status": "completed"},
        {"content": "summarise", "priority": "medium", "status": "in_progress"},
    ]}]  # fmt: skip
    assert any(says("tools done")(u) for u in seen)
    assert peer.errors == []
    wait_for(
        lambda: not HostedSession.objects.filter(task_id=task_id).exclude(holder="").exists(),
        20, "the supervisor to let the session go",
    )  # fmt: skip


# ----- what the host refuses, waits for, and shares ---------------------------------------


def test_a_request_for_the_file_system_is_refused_with_a_reason(hosted):
    task = hosted("rfc-agent", "read /etc/passwd")
    said = wait_text(task.id, "read refused")
    assert said[-1].startswith("read refused: -32601 Taskdeck gives hosted agents no file system")
    note = TaskEvent.objects.get(task_id=task.id, kind=EventKind.HOST_NOTE)
    assert note.data["what"] == "refused" and "fs/read_text_file" in note.data["detail"]


def test_a_turn_silent_past_its_limit_is_cancelled_and_the_session_goes_on(hosted):
    task = hosted("rfc-impatient", "hang")
    # The limit counts from the prompt, which is sent once the agent's process has started
    # and opened its session: seconds on a loaded machine (a Python process importing the
    # SDK), waited for on its own bound, not the cut-off's (issue 31).
    wait_for(
        lambda: HostedSession.objects.filter(task_id=task.id, consumed__gte=1).exists(),
        STARTUP_SECONDS, "the agent's process to start and take the prompt",
    )  # fmt: skip
    wait_for(
        lambda: TaskEvent.objects.filter(task_id=task.id, data__what="stalled").exists(),
        20, "the silent turn to be cut off",
    )  # fmt: skip
    wait_for(lambda: turn_over(task.id), 20, "the cancelled turn to end")
    assert Task.objects.get(pk=task.id).state == State.WORKING
    say(task.id, "echo awake")
    wait_text(task.id, "awake")


def test_a_blocking_send_returns_when_the_agents_turn_ends(hosted):
    task = hosted("rfc-agent", "slow 5")
    assert asyncio.run(until_settled(task.id, 30)) is True
    said = "".join(agent_texts(task.id))  # written before the turn let the task go
    assert "tick 5" in said
    assert not HostedSession.objects.get(task_id=task.id).turn_open


def test_two_supervisors_hold_each_session_once(hosted, host):
    second = host.start_supervisor()
    tasks = [hosted("rfc-agent", f"echo number {i}") for i in range(6)]
    for i, task in enumerate(tasks):
        assert wait_text(task.id, f"number {i}") == [f"number {i}"]  # said once, not twice
    holders = set(HostedSession.objects.filter(task__in=tasks).values_list("holder", flat=True))
    assert "" not in holders and len(holders) <= 2
    sessions = HostedSession.objects.filter(task__in=tasks).values_list("session_id", flat=True)
    for session_id in sessions:
        assert len([line for line in host.prompts() if session_id in line]) == 1
    second.terminate()
    second.wait(timeout=20)
    host.supervisors.remove(second)
