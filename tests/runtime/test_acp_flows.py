"""Editors driving Taskdeck's agents over ACP, end to end: the official SDK client spawns
`manage.py acp` — or the remote door's relay before a live server (`@DOORS`) — real
workers run the agents, the test watches the wire and the database."""

from __future__ import annotations

import dataclasses

import pytest

from a2a.acp_door.models import AcpSession
from a2a.models import Task
from tests.acp_door.conftest import DOORS
from tests.acp_door.peer import kind, says
from tests.runtime.conftest import settle_tasks, wait_idle, wait_state
from tests.runtime.test_flows import item_steps, make_due, post_event, report, results

pytestmark = pytest.mark.django_db(transaction=True)
CWD = "/work/projects/shop"


@pytest.fixture
def editor(runtime, open_peer, acp_key):
    """open an opted-in (by default) editor; every task it made is settled afterwards."""

    def make(**kw):
        kw.setdefault("opted_in", True)
        return open_peer(acp_key, **kw)

    yield make
    settle_tasks(list(Task.objects.values_list("id", flat=True)))


def prompt(peer, sid: str, text: str, **metadata):
    """Start a prompt (its task gets `metadata`); returns the running request."""
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    if metadata:
        params["_meta"] = {"taskdeck/metadata": metadata}
    return peer.start("session/prompt", params)


def as_editor(rpc, acp_key):
    """The HTTP client with the editor's key: an event wakes only its emitter's tenant's
    tasks, and the editor's tasks belong to its key's tenant."""
    return dataclasses.replace(rpc, token=acp_key)


def task_of(sid: str) -> Task:
    return Task.objects.get(pk=AcpSession.objects.get(pk=sid).task_id)


def progress_at_least(n: int):
    return lambda u: (u.get("rawOutput") or {}).get("progress", {}).get("done", 0) >= n


def finished(u) -> bool:
    return u.get("sessionUpdate") == "tool_call_update" and u.get("status") in (
        "completed",
        "failed",
    )


@DOORS
@pytest.mark.parametrize(
    ("choice", "ending"), [("approve", "Plan carried out"), ("reject", "Plan rejected")]
)
def test_an_approval_is_asked_as_a_permission_and_the_answer_decides(editor, choice, ending):
    with editor() as peer:
        peer.permission = lambda tool_call, options: choice
        sid = peer.new_session(CWD, mode="approval")
        answer = peer.prompt(sid, "Roll out 2.14")
        assert answer["stopReason"] == "end_turn"
        assert answer["_meta"]["taskdeck"]["state"] == "completed"
        [(what, _, tool_call)] = peer.asked
        assert what == "permission" and tool_call["title"] == "Approve the plan"
        seen = peer.seen(sid)
        assert any(u.get("title") == "Artifact plan.md" for u in seen)
        told = [u for u in seen if u.get("sessionUpdate") != "plan"]  # the steps, beside
        assert says(ending)(told[-2]) and finished(told[-1])
        assert peer.errors == []


@DOORS
@pytest.mark.parametrize("mode", ["finish_step", "interrupt_immediate", "wait_for_completion"])
def test_suspend_mid_batch_then_resume_runs_every_item_once(editor, mode):
    items = 12 if mode == "wait_for_completion" else 30
    with editor() as peer:
        sid = peer.new_session(CWD, mode="batch")
        running = prompt(peer, sid, "Re-render thumbnails", items=items, pace=2)
        peer.wait_update(sid, progress_at_least(3))
        out = peer.call("session/suspend", {"sessionId": sid, "reason": "check", "mode": mode})
        answer = running.result(timeout=30)
        assert answer["stopReason"] == "end_turn"
        assert answer["_meta"]["taskdeck/suspend"]["handle"] == out["handle"], answer
        task = task_of(sid)
        wait_idle(task.id)
        done_while_paused = len(item_steps(task))
        if mode == "wait_for_completion":
            assert done_while_paused == items  # the turn ran to its end, then held
        else:
            assert done_while_paused < items
        assert Task.objects.get(pk=task.id).state == "paused-by-client"
        mark = len(peer.seen(sid))
        peer.call("session/resume", {"sessionId": sid, "cwd": CWD, "handle": out["handle"]})
        peer.wait_update(sid, kind("resumed"), after=mark)
        # the work after the resume reaches the editor between turns (decision 6)
        peer.wait_update(sid, finished, after=mark, timeout=60)
        wait_state(task.id, "completed")
        assert results(task) == list(range(items))
        assert sorted(item_steps(task)) == sorted(f"item {i}" for i in range(items))


@DOORS
@pytest.mark.parametrize(
    ("event", "payload", "cause"),
    [
        ("ci.build.completed:4321", {"status": "green"}, "external_event"),  # onEvent
        ("ci.status", {"build": 4321, "state": "finished", "status": "green"}, "condition_fired"),
    ],
)
def test_an_agent_that_parks_itself_is_woken_by_an_event_over_http(
    editor, rpc, acp_key, event, payload, cause
):
    with editor() as peer:
        sid = peer.new_session(CWD, mode="ci-wait")
        answer = prompt(peer, sid, "Run the suite", build=4321).result(timeout=30)
        parked = answer["_meta"]["taskdeck/suspend"]
        assert answer["stopReason"] == "end_turn" and parked["initiator"] == "agent"
        suspended = peer.wait_update(sid, kind("suspended"))
        assert suspended["resumeWhen"]["onEvent"] == "ci.build.completed:4321"
        [request] = peer.wait_parked()  # the seed's agent → client session/await_resumption
        assert request["reason"] == "waiting for ci.build.completed:4321"
        assert request["conditions"]["onEvent"] == "ci.build.completed:4321"
        task = task_of(sid)
        wait_idle(task.id)
        post_event(as_editor(rpc, acp_key), event, payload)
        resumed = peer.wait_update(sid, kind("resumed"))
        assert resumed["cause"] == cause and resumed["hadResumeInput"] is True
        peer.wait_update(sid, finished)
        assert report(task) == {"build": 4321, "status": "green", "cause": cause}


@DOORS
def test_a_parked_agent_is_woken_by_its_timeout(editor):
    with editor() as peer:
        sid = peer.new_session(CWD, mode="ci-wait")
        prompt(peer, sid, "Run", build=77, onTimeout="resume_with_input").result(timeout=30)
        task = task_of(sid)
        wait_idle(task.id)
        make_due(task)
        resumed = peer.wait_update(sid, kind("resumed"))
        assert resumed["cause"] == "timeout"
        peer.wait_update(sid, finished)
        assert report(task) == {"build": 77, "status": "assumed-green", "cause": "timeout"}


@DOORS
def test_resume_with_input_and_a_fresh_transcript(editor):
    with editor() as peer:
        sid = peer.new_session(CWD, mode="ci-wait")
        answer = prompt(peer, sid, "Run", build=55).result(timeout=30)
        task = task_of(sid)
        wait_idle(task.id)
        handle = answer["_meta"]["taskdeck/suspend"]["handle"]
        peer.call(
            "session/resume",
            {
                "sessionId": sid,
                "cwd": CWD,
                "handle": handle,
                "input": {"status": "manual"},
                "continueTranscript": False,
            },
        )
        peer.wait_update(sid, says("I see a fresh turn (digest)"))
        peer.wait_update(sid, finished)
        assert report(task)["status"] == "manual"


@DOORS
def test_cancel_ends_the_prompt_and_stops_the_task(editor):
    with editor() as peer:
        sid = peer.new_session(CWD, mode="batch")
        running = prompt(peer, sid, "Long job", items=30, pace=4)
        peer.wait_update(sid, progress_at_least(1))
        peer.notify("session/cancel", {"sessionId": sid})
        assert running.result(timeout=30)["stopReason"] == "cancelled"
        task = task_of(sid)
        wait_idle(task.id)
        assert task.state == "canceled" and len(item_steps(task)) < 30
        peer.wait_update(sid, says("Canceled: canceled from the editor (session/cancel)"))


@DOORS
def test_load_after_a_restart_replays_what_was_first_seen(editor):
    with editor() as first:
        sid = first.new_session(CWD, mode="approval")
        first.prompt(sid, "Roll out 2.14")
        live = first.seen(sid)
    with editor() as second:  # a new process: nothing in memory
        second.call("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
        replay = second.seen(sid)
    with editor() as third:
        third.call("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
        again = third.seen(sid)
    # the commands an attached session is offered are not history: sent on every attach,
    # as a notification that may come after the load's answer (not in `seen` yet)
    commands = "available_commands_update"
    assert [u for u in replay if u["sessionUpdate"] != commands] == [
        u for u in again if u["sessionUpdate"] != commands
    ]  # the same every time
    user = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert user[0]["content"]["text"] == "Roll out 2.14"
    session_only = ("user_message_chunk", commands, "current_mode_update")
    assert [u for u in replay if u["sessionUpdate"] not in session_only] == [
        u for u in live if u["sessionUpdate"] not in session_only
    ]


@DOORS
def test_a_standard_client_meets_no_unknown_kind_through_a_park_and_wake(editor, rpc, acp_key):
    with editor(opted_in=False) as peer:
        sid = peer.new_session(CWD, mode="ci-wait")
        prompt(peer, sid, "Run", build=99).result(timeout=30)
        task = task_of(sid)
        wait_idle(task.id)
        post_event(as_editor(rpc, acp_key), "ci.build.completed:99", {"status": "green"})
        peer.wait_update(sid, says("▶ Resumed (external_event)"))
        peer.wait_update(sid, finished)
        assert peer.seen(sid) and peer.errors == [] and peer.parked == []
        assert any(
            says("⏸ Suspended by the agent: waiting for ci.build.completed:99")(u)
            for u in peer.seen(sid)
        )


@DOORS
def test_a_dismissed_approval_stays_open_and_the_next_prompt_answers_it(editor):
    with editor() as peer:
        peer.permission = lambda tool_call, options: None  # the user closes the dialog
        sid = peer.new_session(CWD, mode="approval")
        answer = peer.prompt(sid, "Roll out 2.14")
        assert answer["stopReason"] == "end_turn"
        assert answer["_meta"]["taskdeck/input"]["title"] == "Approve the plan"
        assert task_of(sid).state == "input-required"
        peer.wait_update(sid, says('Reply "approve" or "reject"'))
        refused = peer.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "maybe"}]}
        )
        assert refused.code == -32602 and task_of(sid).state == "input-required"
        done = peer.prompt(sid, "approve: after the freeze")
        assert done["_meta"]["taskdeck"]["state"] == "completed"
        assert "Approver said: after the freeze" in " ".join(
            p["text"] for p in task_of(sid).status_message.parts
        )


@DOORS
def test_other_questions_are_forms_and_a_refused_answer_is_asked_again(editor):
    answers = iter([{"priority": "urgent", "count": 3}, {"priority": "high", "count": 3}])
    with editor(forms=True) as peer:
        peer.form = lambda message, schema: next(answers)
        sid = peer.new_session(CWD, mode="asker")
        answer = peer.prompt(sid, "Plan it")
        assert answer["_meta"]["taskdeck"]["state"] == "completed"
        (_, first, schema), (_, second, _) = [a for a in peer.asked if a[0] == "form"]
        assert first == "Two questions."
        assert schema["properties"]["priority"]["enum"] == ["low", "high"]
        assert set(schema["required"]) == {"priority", "count"}
        assert second.startswith("That answer was refused")
        peer.wait_update(sid, says("That answer was refused: message.parts.0.data.values.priority"))
        peer.wait_update(sid, says("priority=high, count=3"))


@DOORS
def test_without_forms_several_fields_are_answered_as_typed_json(editor):
    with editor(forms=False) as peer:
        sid = peer.new_session(CWD, mode="asker")
        answer = peer.prompt(sid, "Plan it")
        assert [f["name"] for f in answer["_meta"]["taskdeck/input"]["fields"]] == [
            "priority",
            "count",
        ]
        assert peer.prompt(sid, '{"priority": "low", "count": 5}')["stopReason"] == "end_turn"
        peer.wait_update(sid, says("priority=low, count=5"))


@DOORS
def test_suspend_typed_into_a_running_batch_and_resume_typed_between_turns(editor):
    """As a user types in a standard client (no seed methods): `/suspend` sent while the
    batch's prompt runs is taken at once and ends that turn; `/resume` between turns
    lets the batch finish, its updates arriving between turns."""
    with editor(opted_in=False) as peer:
        sid = peer.new_session(CWD, mode="batch")
        running = prompt(peer, sid, "Re-render thumbnails", items=30, pace=2)
        peer.wait_update(sid, progress_at_least(3))
        answer, said = peer.slash(sid, "/suspend release freeze")
        assert answer["stopReason"] == "end_turn" and "/resume" in said
        ended = running.result(timeout=30)
        assert ended["stopReason"] == "end_turn" and "taskdeck/suspend" in ended["_meta"]
        task = task_of(sid)
        wait_idle(task.id)
        assert Task.objects.get(pk=task.id).state == "paused-by-client"
        mark = len(peer.seen(sid))
        peer.slash(sid, "/resume")
        peer.wait_update(sid, finished, after=mark, timeout=60)
        wait_state(task.id, "completed")
        assert results(task) == list(range(30))
        assert peer.errors == []
