"""Hosted ACP sessions that cost nothing idle, and "Always allow" remembered
(a2a/acp_host/idle.py, a2a/acp_host/permission_memory.py): real agents in real processes
under a real supervisor (the fixtures of tests/runtime/test_acp_host.py), on the suite's
database.

Idle: the sleepy agents of tests/runtime/hosting.py have an idle limit of 1 s. The test
waits (polling, with a deadline) for the agent's process to be gone, then sends the next
message, which must be answered — with the session taken up (`session/resume`, the RFC
agent) or a new agent session noted on the timeline (the npm example agent, which can
reload nothing).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from django.test import Client

from a2a import conf, services
from a2a.acp_host.models import HostedSession
from a2a.event_kinds import EventKind
from a2a.input_requests import RESPONSE_TYPE
from a2a.lifecycle import State
from a2a.models import Task, TaskEvent
from agui.projection import catch_up
from tests.runtime import hosting
from tests.runtime import test_acp_host as base
from tests.runtime.conftest import wait_for, wait_state
from tests.runtime.test_acp_host import OPERATOR, agent_texts, idle_since, say, turn_over, wait_text

# the same supervisor set-up as the hosting tests (a module's own supervisor)
host = base.host
hosted = base.hosted

pytestmark = pytest.mark.django_db(transaction=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def agent_pids(task_id: str) -> set[int]:
    """The processes working in the task's session directory: its agent's."""
    where = (Path(conf.ACP_HOST.sessions_dir) / task_id).resolve()
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if Path(os.readlink(proc / "cwd")) == where:
                    found.add(int(proc.name))
            except OSError:
                continue  # gone meanwhile, or not ours to read
    return found


def notes(task_id: str, what: str) -> list[str]:
    return [
        e.data["detail"]
        for e in TaskEvent.objects.filter(task_id=task_id, kind=EventKind.HOST_NOTE).order_by("id")
        if e.data.get("what") == what
    ]


def asked(task_id: str) -> int:
    """How many questions reached the inbox."""
    return TaskEvent.objects.filter(task_id=task_id, kind=EventKind.INPUT_REQUESTED).count()


def answer(task_id: str, values: dict) -> None:
    request = Task.objects.get(pk=task_id).input_request
    data = {"type": RESPONSE_TYPE, "requestId": request["requestId"], "values": values}
    message = services.IncomingMessage(
        message_id=str(uuid.uuid4()), parts=[{"kind": "data", "data": data}]
    )
    services.provide_input(task_id, message, actor=OPERATOR)


def said_count(task_id: str, text: str) -> int:
    return sum(1 for t in agent_texts(task_id) if text in t)


def wait_said(task_id: str, text: str, times: int) -> None:
    wait_for(lambda: said_count(task_id, text) >= times, 30, f"{text!r} said {times} times")
    assert said_count(task_id, text) == times, agent_texts(task_id)


# ----- idle: the process stopped, the next message answered --------------------------------


def test_an_idle_agent_is_stopped_and_its_next_message_resumes_its_session(
    hosted, host, django_user_model
):
    from dashboard import roles
    from tests.dashboard.conftest import make_user

    task = hosted("rfc-sleepy", "echo first")
    wait_text(task.id, "first")
    row = HostedSession.objects.get(task_id=task.id)
    pid = int(next(line for line in host.prompts() if row.session_id in line).split()[0])
    wait_for(lambda: not alive(pid), 30, "the idle agent's process to be stopped")
    stopped = notes(task.id, "idle_stopped")
    assert len(stopped) == 1 and "idle for 1 s" in stopped[0]
    assert HostedSession.objects.get(task_id=task.id).idle_stopped_at is not None
    # the task waits as before: working, and idle on the board and its page
    assert Task.objects.get(pk=task.id).state == State.WORKING
    catch_up([task.id])
    assert idle_since(task.id) is not None
    op = Client()
    op.force_login(make_user(django_user_model, "ana", roles.OPERATORS))
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Idle — waiting for your next message" in page
    assert "Stopped the idle agent" in page  # the timeline's entry

    # the next message (here the dashboard's message box) starts it and takes it up
    assert op.post(f"/tasks/{task.id}/message", {"text": "echo second"}).status_code == 302
    assert wait_text(task.id, "second") == ["first", "second"]
    after = HostedSession.objects.get(task_id=task.id)
    assert after.session_id == row.session_id and after.takeovers == 0
    assert after.idle_stopped_at is None
    woken = notes(task.id, "woken")
    assert len(woken) == 1 and "taken up with session/resume" in woken[0]
    assert not notes(task.id, "takeover") and not notes(task.id, "new_session")
    lines = [line for line in host.prompts() if row.session_id in line]
    assert [line.split(" ", 2)[2] for line in lines] == ["echo first", "echo second"]
    assert int(lines[1].split()[0]) != pid  # a new process
    # idle again: stopped again (one note per stop)
    wait_for(lambda: len(notes(task.id, "idle_stopped")) == 2, 30, "the second idle stop")


def test_an_idle_agent_that_cannot_reload_gets_a_new_session_that_answers(hosted):
    """The npm SDK's example offers neither session/load nor session/resume: its next
    message is a new agent session, and the timeline says its history is gone."""
    if not hosting.example_installed():
        pytest.fail("the npm example agent is missing: run `make acp-peers`")
    task = hosted("example-sleepy", "Hello, agent")
    wait_state(task.id, State.INPUT_REQUIRED, timeout=40)
    pids = wait_for(lambda: agent_pids(task.id), 10, "the example agent's process")
    answer(task.id, {"decision": {"decision": "approve"}})
    wait_text(task.id, "Perfect!", 40)
    first_session = HostedSession.objects.get(task_id=task.id).session_id
    wait_for(lambda: notes(task.id, "idle_stopped"), 30, "the idle stop")
    wait_for(lambda: not any(alive(p) for p in pids), 30, "its process to be gone")
    assert not agent_pids(task.id)

    say(task.id, "Once more")
    wait_state(task.id, State.INPUT_REQUIRED, timeout=40)  # a new turn, asking again
    answer(task.id, {"decision": {"decision": "approve"}})
    wait_said(task.id, "Perfect!", 2)
    fresh = notes(task.id, "new_session")
    assert len(fresh) == 1 and "new agent session: the agent cannot reload its history" in fresh[0]
    assert HostedSession.objects.get(task_id=task.id).session_id != first_session


def test_a_parked_agent_stopped_idle_hears_of_its_resume(hosted, host):
    """Parked for an event (possibly for days): stopped idle, and the event's resume starts
    it, takes its session up and passes the resume on with its input."""
    task = hosted("rfc-sleepy", 'park {"onEvent": "idle.ci.done"}')
    wait_state(task.id, State.PAUSED_BY_AGENT)
    session = HostedSession.objects.get(task_id=task.id).session_id
    pid = int(next(line for line in host.prompts() if session in line).split()[0])
    wait_for(lambda: not alive(pid), 30, "the parked agent's process to be stopped")
    assert notes(task.id, "idle_stopped")
    services.emit_event("idle.ci.done", {"ok": True}, actor=OPERATOR)
    said = wait_text(task.id, "resumed input=")
    assert said[-1].startswith('resumed input={"event": "idle.ci.done"')
    assert "session/resume" in notes(task.id, "woken")[0]


# ----- "Always allow" / "Always reject", remembered for the session -------------------------


def test_always_allow_answers_later_requests_of_its_kind_without_asking(hosted):
    task = hosted("rfc-agent", "askalways edit Edit src/a.py")
    wait_state(task.id, State.INPUT_REQUIRED)
    request = Task.objects.get(pk=task.id).input_request
    assert [f["name"] for f in request["fields"]] == ["decision", "remember"]
    assert "edit tool calls" in request["fields"][1]["help"]
    answer(task.id, {"decision": {"decision": "approve"}, "remember": True})
    wait_said(task.id, "permission: always", 1)  # the agent's own "Always allow"
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")

    say(task.id, "askalways edit Edit src/b.py")  # another edit: answered from memory
    wait_said(task.id, "permission: always", 2)
    assert asked(task.id) == 1  # no inbox item
    remembered = notes(task.id, "remembered")
    assert len(remembered) == 1
    assert "Allowed from memory: Edit src/b.py" in remembered[0]
    assert request["requestId"] in remembered[0]  # the answer it repeats
    assert HostedSession.objects.get(task_id=task.id).remembered["edit"]["kind"] == "allow_always"

    say(task.id, "askalways delete Delete build/")  # another kind: asked
    wait_state(task.id, State.INPUT_REQUIRED)
    assert asked(task.id) == 2


def test_always_reject_is_remembered_for_that_command_and_allow_once_stays_once(hosted):
    task = hosted("rfc-agent", "askalways execute rm -rf build")
    wait_state(task.id, State.INPUT_REQUIRED)
    answer(task.id, {"decision": {"decision": "reject", "comment": "no"}, "remember": True})
    wait_said(task.id, "permission: never", 1)
    wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    say(task.id, "askalways execute rm -rf build")  # the same command: rejected from memory
    wait_said(task.id, "permission: never", 2)
    assert asked(task.id) == 1
    assert "Rejected from memory: rm -rf build" in notes(task.id, "remembered")[0]

    # a command is its own scope: another one is asked; allowed once, it is asked again
    for n in (1, 2):
        say(task.id, "askalways execute ls")
        wait_state(task.id, State.INPUT_REQUIRED)
        assert asked(task.id) == 1 + n
        # typed, as an A2A client or an editor would: the optional field keeps its default
        services.add_message(task.id, _text("approve"), actor=OPERATOR)
        wait_said(task.id, "permission: once", n)
        wait_for(lambda: turn_over(task.id), 20, "the turn to end")
    assert list(HostedSession.objects.get(task_id=task.id).remembered) == ["execute: rm -rf build"]


def test_a_bad_remember_answer_is_refused_and_the_agent_keeps_waiting(hosted):
    task = hosted("rfc-agent", "askalways edit Edit src/a.py")
    wait_state(task.id, State.INPUT_REQUIRED)
    with pytest.raises(Exception, match="remember"):
        answer(task.id, {"decision": {"decision": "approve"}, "remember": "always"})
    assert Task.objects.get(pk=task.id).state == State.INPUT_REQUIRED
    assert not HostedSession.objects.get(task_id=task.id).remembered
    answer(task.id, {"decision": {"decision": "approve"}})  # not remembered: allow once
    wait_said(task.id, "permission: once", 1)
    assert not HostedSession.objects.get(task_id=task.id).remembered


def _text(text: str) -> services.IncomingMessage:
    return services.IncomingMessage(
        message_id=str(uuid.uuid4()), parts=[{"kind": "text", "text": text}]
    )
