"""Slash commands as a user types them, and no traps (issue 30, items 1, 2 and 5): one
`manage.py acp` process per editor for the whole module (two editors: A and B), a fresh
session per test. No workers: a submitted task stays queued, which is a task "working in
the background" for the door (a worker would hold it); the tests move it themselves with
the services an agent or an operator uses.

Every update is validated by the SDK client's own models (tests/acp_door/peer.py); each
test ends with both editors' `errors` empty and no traceback in either process's log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from acp import schema as s
from django.db import connections

from a2a import api_keys, services
from a2a.acp_door.models import AcpSession
from a2a.models import Suspension, Task
from tests.acp_door.conftest import DOORS, TRANSPORTS, relay_command, relay_env
from tests.acp_door.peer import WAIT, Peer, agent_env, kind, says
from tests.conftest import AGENT
from tests.runtime.conftest import wait_for
from tests.runtime.test_acpx import acpx_runner, messages

pytestmark = pytest.mark.django_db(transaction=True)
CWD = "/work/projects/shop"
OPERATOR = services.Actor("operator", "ana")
APPROVAL = {
    "title": "Ship it?",
    "fields": [{"name": "decision", "label": "Decision", "type": "approval", "required": True}],
}


@pytest.fixture(scope="module", params=TRANSPORTS)
def editors(
    request, django_db_setup, django_db_blocker, tmp_path_factory
) -> Iterator[tuple[Peer, Peer]]:
    """Editors A and B: two door processes under one key, kept for the module — on each
    door of TRANSPORTS (tests/acp_door/conftest.py): `manage.py acp`, or the remote door
    (two relays, each before its own web process, so the one-turn rule and the withdrawn
    dialogs hold across processes). The key is
    checked once at start-up (TASKDECK_REVALIDATE_SECONDS is long here): the tests' table
    flushes between tests must not read as a revocation."""
    logs = tmp_path_factory.mktemp("acp-commands")
    with django_db_blocker.unblock():
        _, key = api_keys.create_key("editor", ["read", "write"])
        connections.close_all()
    if request.param == "remote":
        relay = request.getfixturevalue("relay_file")
        servers = request.getfixturevalue("acp_servers")
        to_a, to_b = (
            relay_command(relay, servers(n, TASKDECK_REVALIDATE_SECONDS="3600")) for n in (1, 2)
        )
        a = Peer(relay_env(key), log=logs / "a.log", command=to_a, cwd=relay.parent)
        b = Peer(relay_env(key), log=logs / "b.log", command=to_b, cwd=relay.parent)
    else:
        env = agent_env(key, TASKDECK_REVALIDATE_SECONDS="3600")
        a = Peer(env, log=logs / "a.log")
        b = Peer(env, log=logs / "b.log")
    with a, b:
        a.initialize()
        b.initialize()
        yield a, b
    for log in sorted(logs.glob("*.log")):
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and "never retrieved" not in text, text[-4000:]


@pytest.fixture
def a(editors) -> Iterator[Peer]:
    yield editors[0]
    assert editors[0].errors == [] and editors[1].errors == []


@pytest.fixture
def b(editors) -> Peer:
    return editors[1]


def task_of(sid: str) -> Task:
    return Task.objects.get(pk=AcpSession.objects.get(pk=sid).task_id)


def start_prompt(peer: Peer, sid: str, text: str = "Roll out 2.14"):
    """A prompt left running (its task queued, as if a worker held it)."""
    mark = len(peer.seen(sid))
    running = peer.start(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    )
    created = peer.wait_update(sid, kind("tool_call"), after=mark)
    return running, Task.objects.get(pk=created["rawInput"]["taskId"])


def test_commands_are_advertised_and_validate_against_the_sdk(a):
    sid = a.new_session(CWD)
    update = a.wait_update(sid, kind("available_commands_update"))
    parsed = s.AvailableCommandsUpdate.model_validate(update)
    assert [c.name for c in parsed.available_commands] == [
        "status",
        "suspend",
        "resume",
        "answer",
        "cancel",
    ]
    hints = {c.name: c.input.root.hint for c in parsed.available_commands if c.input}
    assert hints["suspend"] == "[mode] reason"
    answer, said = a.slash(sid, "/status")
    assert answer["stopReason"] == "end_turn" and said.startswith("No task yet")
    assert not Task.objects.exists()  # a command is never a message to a task
    a.call("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
    a.wait_update(sid, kind("available_commands_update"), after=2)  # again on attach


def test_suspend_typed_during_a_turn_ends_it_and_resume_goes_on(a):
    sid = a.new_session(CWD)
    running, task = start_prompt(a, sid)
    busy = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]}
    )
    assert busy.code == -32004 and "/suspend" in busy.data["detail"]
    # commands are taken while the turn runs
    answer, said = a.slash(sid, "/status")
    assert f"Task {task.id} (approval): submitted" in said and "/suspend" in said
    answer, said = a.slash(sid, "/suspend now release freeze")
    assert answer["stopReason"] == "end_turn" and "Type /resume to continue" in said
    ended = running.result(timeout=30)
    susp = Task.objects.get(pk=task.id).current_suspension
    assert ended["stopReason"] == "end_turn"
    assert ended["_meta"]["taskdeck/suspend"]["handle"] == susp.handle
    assert (susp.mode, susp.reason, susp.requested_by) == (
        "interrupt_immediate",
        "release freeze",
        "apikey:editor",
    )
    a.wait_update(sid, says("⏸ Suspended by the client: release freeze"))
    refused = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]}
    )
    assert refused.code == -32004
    assert "type /resume to continue" in refused.data["detail"], refused.data
    assert "tasks/resume" not in refused.data["detail"]
    answer, said = a.slash(sid, '/resume {"go": true}')
    assert answer["_meta"]["taskdeck"]["state"] == "working", answer
    a.wait_update(sid, says("▶ Resumed (explicit_resume)"))
    assert Suspension.objects.get(pk=susp.pk).resume_input == {"go": True}
    again = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/resume"}]}
    )
    assert again.code == -32013 and "/status" in again.data["detail"]
    answer, said = a.slash(sid, "/cancel")
    assert "Canceled the task." in said and Task.objects.get(pk=task.id).state == "canceled"


def test_pauses_say_who_paused_and_how_to_go_on(a):
    sid = a.new_session(CWD)
    running, task = start_prompt(a, sid)
    services.pause_task(task.id, actor=OPERATOR, reason="incident")
    assert running.result(timeout=30)["stopReason"] == "end_turn"
    a.wait_update(sid, says("⏸ Suspended by an operator (ana): incident"))
    refused = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    )
    assert refused.code == -32004
    assert refused.data["detail"].startswith("this task is paused by an operator (ana): incident")
    _, said = a.slash(sid, "/status")
    assert "Paused by an operator (ana): incident" in said
    a.slash(sid, "/resume")
    # the agent's own pause (a spent budget: paused-by-client, asked for by the agent)
    services.pause_task(task.id, actor=AGENT, reason="budget spent")
    said = a.wait_update(sid, says("⏸ Suspended by the agent: budget spent"))
    assert "the client" not in said["content"]["text"]
    assert not any(says("Suspended by the client")(u) for u in a.seen(sid))
    a.slash(sid, "/cancel")


def asking(peer: Peer, sid: str, question: str) -> Task:
    """A task of the session waiting on an approval, asked between turns (shown as text):
    a prompt, /suspend and /resume end its turn (the task is working); then it asks."""
    running, task = start_prompt(peer, sid)
    peer.slash(sid, "/suspend")
    running.result(timeout=30)
    peer.slash(sid, "/resume")
    services.request_input(task.id, actor=AGENT, explanation=question, request=APPROVAL)
    peer.wait_update(sid, says(question))
    return task


def test_an_open_question_is_answered_by_typing_by_command_or_cancelled(a):
    sid = a.new_session(CWD)
    task = asking(a, sid, "Ship 2.14?")
    # modes cannot be switched silently while the task is open
    switch = a.error("session/set_mode", {"sessionId": sid, "modeId": "batch"})
    assert switch.code == -32004 and "/cancel" in switch.data["detail"]
    bad = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "maybe"}]}
    )
    detail = bad.data["detail"]
    assert bad.code == -32602 and "/answer" in detail and "/cancel" in detail, detail
    # the field as the user knows it, not the A2A message's inner path
    assert "decision" in detail and "message.parts" not in detail, detail
    assert "message.parts" not in str(bad.data["errors"]), bad.data
    answered = a.start(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": "/answer approve: go"}]},
    )
    # the database changes with no update to wake the peer's wait_until: poll it
    wait_for(lambda: Task.objects.get(pk=task.id).state == "working", what="the answer")
    services.complete_task(task.id, actor=AGENT, text="Shipped.")
    done = answered.result(timeout=30)
    assert (done["stopReason"], done["_meta"]["taskdeck"]["state"]) == ("end_turn", "completed")
    # a new question, cancelled between turns: session/cancel cancels the task asking it
    task = asking(a, sid, "Ship 2.15?")
    a.notify("session/cancel", {"sessionId": sid})
    wait_for(lambda: Task.objects.get(pk=task.id).state == "canceled", what="the cancel")
    refused = a.error(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/answer yes"}]}
    )
    assert refused.code == -32004 and "no open question" in refused.data["detail"]
    mark = len(a.seen(sid))
    assert a.call("session/set_mode", {"sessionId": sid, "modeId": "batch"}) == {}
    assert a.wait_update(sid, kind("current_mode_update"), after=mark)["currentModeId"] == "batch"


def test_two_editors_one_turn_and_a_permission_answered_once(a, b):
    sid = a.new_session(CWD)
    b.call("session/resume", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
    running, task = start_prompt(a, sid)
    busy = b.error("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    assert busy.code == -32004 and "another editor" in busy.data["detail"], busy.data
    _, said = b.slash(sid, "/status")  # B may look while A's turn runs
    assert "submitted" in said
    # A's turn asks; the dashboard answers first: A's dialog is withdrawn
    a.permission = lambda tool_call, options: WAIT
    services.start_task(task.id, actor=AGENT)
    request = services.request_input(
        task.id, actor=AGENT, explanation="Ship 2.14?", request=APPROVAL
    )
    a.wait_until(lambda: [x for x in a.asked if x[1] == sid], what="the permission dialog")
    services.answer_input(
        task.id,
        request["requestId"],
        {"decision": {"decision": "approve", "comment": ""}},
        actor=OPERATOR,
        via="dashboard",
    )
    [withdrawn] = a.wait_until(lambda: a.withdrawn, what="the dialog withdrawn")
    assert s.CancelRequestNotification.model_validate(withdrawn).request_id is not None
    b.slash(sid, "/cancel")  # from the other editor: A's turn ends cancelled
    assert running.result(timeout=30)["stopReason"] in ("cancelled", "end_turn")
    assert Task.objects.get(pk=task.id).state == "canceled"
    a.permission = lambda tool_call, options: "approve"


def said(done: subprocess.CompletedProcess) -> str:
    """The agent's messages of one acpx prompt, as the user reads them."""
    updates = [
        m["params"]["update"] for m in messages(done.stdout) if m.get("method") == "session/update"
    ]
    return "".join(
        (u.get("content") or {}).get("text", "")
        for u in updates
        if u.get("sessionUpdate") == "agent_message_chunk"
    )


@DOORS
def test_acpx_suspends_and_resumes_with_typed_commands(
    transactional_db, tmp_path, transport, request
):
    """As a user types in acpx (one agent process, kept by acpx's queue owner; no workers:
    the task stays queued, which the door treats as work going on in the background):
    the turn ends while the task works on (TASKDECK_ACP_BACKGROUND_SECONDS), then
    /suspend, a refused prompt that names /resume, an operator's hold /status names, and
    /resume and /cancel; an open question answered by typing. Remote: acpx launches the
    relay (no database settings) before a server with that setting."""
    _, key = api_keys.create_key("typist", ["read", "write"])
    if transport == "remote":
        relay = request.getfixturevalue("relay_file")
        server = request.getfixturevalue("acp_servers")(TASKDECK_ACP_BACKGROUND_SECONDS="0.2")
        run = acpx_runner(key, tmp_path, agent=relay_command(relay, server), env=relay_env(key))
    else:
        run = acpx_runner(key, tmp_path, TASKDECK_ACP_BACKGROUND_SECONDS="0.2")

    def prompt(text: str) -> subprocess.CompletedProcess:
        return run("--format", "json", "prompt", "-s", "backend", text)

    try:
        made = run("sessions", "new", "--name", "backend")
        assert made.returncode == 0, made.stderr.decode()[-2000:]
        started = prompt("Roll out 2.14")
        assert started.returncode == 0, started.stderr.decode()[-2000:]
        traffic = messages(started.stdout)
        assert any(
            (m.get("params") or {}).get("update", {}).get("sessionUpdate")
            == "available_commands_update"
            for m in traffic
        )
        assert "works on in the background" in said(started)
        [task] = Task.objects.all()
        held = prompt("/suspend release freeze")
        assert held.returncode == 0 and "Type /resume to continue" in said(held)
        assert Task.objects.get(pk=task.id).state == "paused-by-client"
        refused = prompt("deploy now")
        shown = (refused.stdout + refused.stderr).decode()
        assert refused.returncode != 0 and "type /resume to continue" in shown, shown[-2000:]
        assert prompt("/resume").returncode == 0
        assert Task.objects.get(pk=task.id).state == "working"
        services.pause_task(task.id, actor=services.Actor("operator", "ana"), reason="incident")
        status = prompt("/status")
        assert "Paused by an operator (ana): incident" in said(status), said(status)
        assert prompt("/resume").returncode == 0
        # the agent asks; the user answers by typing /answer (the turn follows the task)
        services.request_input(task.id, actor=AGENT, explanation="Ship 2.14?", request=APPROVAL)
        status = prompt("/status")
        assert "Open question: **Ship it?**" in said(status), said(status)
        answered = prompt("/answer approve: go")
        assert answered.returncode == 0, answered.stderr.decode()[-2000:]
        assert Task.objects.get(pk=task.id).state == "working"
        cancel = prompt("/cancel")
        assert "Canceled the task." in said(cancel)
        assert Task.objects.get(pk=task.id).state == "canceled"
    finally:
        run("sessions", "close", "backend", timeout=30)
