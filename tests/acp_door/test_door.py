"""The ACP door through the official SDK client, without agent workers: identity,
capabilities, sessions, and suspend/resume on a task no worker has picked up yet (a
submitted task can be paused), in both directions between the editor and the dashboard.
Each test runs on the doors `@DOORS` names: `manage.py acp` on stdio (the SQLite lane), and
the remote door — the relay, with no database settings, before a live server (the
PostgreSQL lane); both with TASKDECK_TEST_DOORS=both (tests/acp_door/conftest.py)."""

from __future__ import annotations

import pytest
from acp import RequestError

from a2a import api_keys, services, skills
from a2a.acp_door.models import AcpSession
from a2a.models import Suspension, Task
from tests.acp_door.conftest import DOORS
from tests.acp_door.peer import kind, says
from tests.agui.test_websocket import Client as BoardSocket
from tests.runtime.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
CWD = "/work/projects/shop"


def task_of(sid: str) -> Task:
    return Task.objects.get(pk=AcpSession.objects.get(pk=sid).task_id)


def start_prompt(peer, sid: str, text: str = "Roll out 2.14"):
    """A prompt left running (no worker picks its task up): returns its future and task."""
    running = peer.start(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    )
    created = peer.wait_update(sid, kind("tool_call"))
    return running, Task.objects.get(pk=created["rawInput"]["taskId"])


# --- identity and capabilities -------------------------------------------------------------


@DOORS
def test_initialize_declares_sessions_suspend_and_the_key_it_wants(open_peer, acp_key):
    with open_peer(acp_key) as peer:
        caps = peer.init["agentCapabilities"]
        assert caps["loadSession"] is True
        assert set(caps["sessionCapabilities"]) == {"list", "resume", "close"}
        seed = {"supportsSuspend": True, "supportsAwaitResumption": True}
        assert caps["_meta"]["taskdeck/suspend"].items() >= seed.items()
        assert caps.items() >= seed.items()  # also at the root, as the seed writes them
        assert set(caps["resumeCauses"]) == set(Suspension.Cause.values)
        [method] = peer.init["authMethods"]
        assert method["type"] == "env_var" and method["vars"][0]["name"] == "TASKDECK_API_KEY"
        new = peer.call("session/new", {"cwd": CWD, "mcpServers": []})
        modes = new["modes"]
        assert {m["id"] for m in modes["availableModes"]} == set(skills.ids())
        assert modes["currentModeId"] == "approval"


@DOORS
def test_without_a_key_nothing_but_initialize_and_authenticate(open_peer, acp_key, unchanged):
    with open_peer(None) as peer, unchanged():
        for method, params in [
            ("session/new", {"cwd": CWD, "mcpServers": []}),
            ("session/list", {}),
            ("session/suspend", {"sessionId": "sess-x"}),
        ]:
            refused = peer.error(method, params)
            assert refused.code == -32000 and "TASKDECK_API_KEY" in str(refused.data), refused
        bad = peer.error(
            "authenticate",
            {"methodId": "taskdeck-api-key", "_meta": {"taskdeck/apiKey": "td_nope_x"}},
        )
        assert bad.code == -32000
        assert AcpSession.objects.count() == 0
        peer.call(
            "authenticate", {"methodId": "taskdeck-api-key", "_meta": {"taskdeck/apiKey": acp_key}}
        )
    with open_peer(None) as peer:  # the same key works once authenticated
        peer.call(
            "authenticate", {"methodId": "taskdeck-api-key", "_meta": {"taskdeck/apiKey": acp_key}}
        )
        assert peer.new_session(CWD).startswith("sess-")


@DOORS
def test_a_read_key_lists_and_loads_but_cannot_start_or_suspend(
    open_peer, acp_key, transactional_db
):
    _, read_only = api_keys.create_key("watcher", ["read"], owner="editor")
    with open_peer(acp_key) as writer:
        sid = writer.new_session(CWD)
    with open_peer(read_only) as peer:
        assert [s["sessionId"] for s in peer.call("session/list", {})["sessions"]] == [sid]
        peer.call("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
        for method, params in [
            ("session/new", {"cwd": CWD, "mcpServers": []}),
            ("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}),
            ("session/suspend", {"sessionId": sid}),
            ("session/resume", {"sessionId": sid, "cwd": CWD, "handle": "h"}),
        ]:
            refused = peer.error(method, params)
            assert refused.code == -32000 and "'write' scope" in str(refused.data), method


@DOORS
def test_meta_cannot_replace_a_typed_parameter(open_peer, acp_key):
    """The SDK's own routes would let `_meta.cwd` replace `cwd`; the door's do not."""
    with open_peer(acp_key) as peer:
        sid = peer.call("session/new", {"cwd": CWD, "mcpServers": [], "_meta": {"cwd": "/etc"}})[
            "sessionId"
        ]
        assert AcpSession.objects.get(pk=sid).cwd == CWD


# --- sessions ----------------------------------------------------------------------------


@DOORS
def test_modes_are_skills_and_an_unknown_mode_is_refused(open_peer, acp_key, unchanged):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD, mode="batch")
        assert AcpSession.objects.get(pk=sid).skill == "batch"
        with unchanged():
            refused = peer.error("session/set_mode", {"sessionId": sid, "modeId": "astrology"})
        assert refused.code == -32602 and "modeId" in refused.data["errors"]
        assert AcpSession.objects.get(pk=sid).skill == "batch"


@DOORS
def test_list_pages_and_filters_and_close_hides_a_session_that_never_started(open_peer, acp_key):
    with open_peer(acp_key) as peer:
        here = [peer.new_session(CWD) for _ in range(3)]
        elsewhere = peer.new_session("/elsewhere")
        listed = peer.call("session/list", {"cwd": CWD})["sessions"]
        assert {s["sessionId"] for s in listed} == set(here)
        peer.call("session/close", {"sessionId": here[0]})
        assert {s["sessionId"] for s in peer.call("session/list", {})["sessions"]} == {
            *here[1:],
            elsewhere,
        }
        refused = peer.error("session/list", {"cursor": "sess-unknown"})
        assert refused.code == -32602


def test_a_closed_session_with_a_task_stays_listed_as_closed_and_loads(open_peer, acp_key):
    """Closing stops following a session; its task and history are still there, so the
    list keeps it (marked closed) and session/load opens it again with its history."""
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        running, _ = start_prompt(peer, sid)
        peer.call("session/close", {"sessionId": sid})
        assert running.result(timeout=30)["stopReason"] == "cancelled"
        (info,) = [s for s in peer.call("session/list", {})["sessions"] if s["sessionId"] == sid]
        assert info["_meta"]["taskdeck"]["closed"] is True and info["_meta"]["taskdeck"]["closedAt"]
    with open_peer(acp_key) as other:
        other.call("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
        assert any("Roll out 2.14" in str(u) for u in other.seen(sid))  # its history
        (info,) = [s for s in other.call("session/list", {})["sessions"] if s["sessionId"] == sid]
        assert "_meta" not in info  # open again


# --- suspend and resume from the editor ------------------------------------------------


@DOORS
def test_suspend_ends_the_prompt_and_a_standard_client_sees_it_as_text(open_peer, acp_key):
    with open_peer(acp_key, opted_in=False) as peer:
        sid = peer.new_session(CWD)
        running, task = start_prompt(peer, sid)
        out = peer.call(
            "session/suspend",
            {
                "sessionId": sid,
                "reason": "release freeze",
                "mode": "finish_step",
                "resumeWhen": {
                    "timeout": {"durationMinutes": 30, "onTimeout": "resume_with_summary"}
                },
            },
        )
        susp = Task.objects.get(pk=task.id).current_suspension
        assert out["handle"] == susp.handle and out["reason"] == "release freeze"
        assert out["resumeWhen"]["timeout"]["durationMinutes"] == 30 and out["summary"]
        answer = running.result(timeout=30)
        assert answer["stopReason"] == "end_turn"
        assert answer["_meta"]["taskdeck/suspend"]["handle"] == susp.handle
        peer.wait_update(sid, says("⏸ Suspended by the client: release freeze"))
        # the suspension's session_info_update (the task's title came in one of its own)
        info = peer.wait_update(sid, lambda u: kind("session_info_update")(u) and "_meta" in u)
        assert info["_meta"]["taskdeck/suspend"]["state"] == "suspended"
        assert peer.errors == []  # never an update kind a standard client refuses
        assert susp.requested_by == "apikey:editor" and susp.reason == "release freeze"


@DOORS
def test_an_opted_in_client_gets_the_seeds_updates(open_peer, acp_key):
    with open_peer(acp_key, opted_in=True) as peer:
        sid = peer.new_session(CWD)
        running, _ = start_prompt(peer, sid)
        handle = peer.call("session/suspend", {"sessionId": sid, "reason": "review"})["handle"]
        running.result(timeout=30)
        suspended = peer.wait_update(sid, kind("suspended"))
        assert suspended["handle"] == handle and suspended["initiator"] == "client"
        assert suspended["reason"] == "review" and suspended["suspendedAt"].endswith("Z")
        out = peer.call(
            "session/resume",
            {
                "sessionId": sid,
                "cwd": CWD,
                "handle": handle,
                "input": {"go": True},
                "continueTranscript": False,
            },
        )
        assert out["_meta"]["taskdeck/suspend"]["hadResumeInput"] is True
        resumed = peer.wait_update(sid, kind("resumed"))
        assert resumed == {
            **resumed,
            "handle": handle,
            "cause": "explicit_resume",
            "hadResumeInput": True,
            "continueTranscript": False,
        }
        susp = Suspension.objects.get(handle=handle)
        assert susp.resume_input == {"go": True} and susp.continue_transcript is False


@DOORS
def test_resume_rules_stale_handle_not_suspended_and_plain_reattach(open_peer, acp_key, unchanged):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        running, task = start_prompt(peer, sid)
        handle = peer.call("session/suspend", {"sessionId": sid})["handle"]
        running.result(timeout=30)
        with unchanged():
            stale = peer.error(
                "session/resume", {"sessionId": sid, "cwd": CWD, "handle": "suspend-old"}
            )
            plain = peer.call("session/resume", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
            bad = peer.error(
                "session/resume",
                {"sessionId": sid, "cwd": CWD, "handle": handle, "continueTranscript": "no"},
            )
        assert stale.code == -32012 and stale.data["handle"] == "suspend-old"
        assert "_meta" not in plain  # a reconnect lifts nothing (docs/design/acp-door.md, D64)
        assert bad.code == -32602 and "continueTranscript" in bad.data["errors"]
        assert Task.objects.get(pk=task.id).state == "paused-by-client"
        peer.call("session/resume", {"sessionId": sid, "cwd": CWD, "_meta": {"handle": handle}})
        assert Task.objects.get(pk=task.id).state == "working"
        again = peer.error("session/resume", {"sessionId": sid, "cwd": CWD, "handle": handle})
        assert again.code in (-32012, -32013)
        later = peer.error("session/resume", {"sessionId": sid, "cwd": CWD, "input": 1})
        assert later.code == -32013


@DOORS
def test_suspend_refusals_change_nothing(open_peer, acp_key, unchanged):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        with unchanged():
            nothing = peer.error("session/suspend", {"sessionId": sid, "reason": "x"})
        assert nothing.code == -32011  # no task yet
        running, task = start_prompt(peer, sid)
        cases = [
            ({"mode": "whenever"}, "mode"),
            ({"reason": "r" * 2001}, "reason"),
            (
                {"resumeWhen": {"timeout": {"durationMinutes": 0}}},
                "resumeWhen.timeout.durationMinutes",
            ),
            ({"resumeWhen": {"onEvent": "has space"}}, "resumeWhen.onEvent"),
        ]
        with unchanged():
            for params, path in cases:
                refused = peer.error("session/suspend", {"sessionId": sid, **params})
                assert refused.code == -32602 and path in refused.data["errors"], (
                    params,
                    refused.data,
                )
        peer.notify("session/cancel", {"sessionId": sid})
        assert running.result(timeout=30)["stopReason"] == "cancelled"
        assert Task.objects.get(pk=task.id).state == "canceled"
        with unchanged():
            over = peer.error("session/suspend", {"sessionId": sid})
        assert over.code == -32011


@DOORS
def test_a_prompt_to_a_suspended_session_is_refused(open_peer, acp_key, unchanged):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        running, _ = start_prompt(peer, sid)
        busy = peer.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]}
        )
        assert busy.code == -32004  # one prompt at a time
        peer.call("session/suspend", {"sessionId": sid})
        running.result(timeout=30)
        with unchanged():
            refused = peer.error(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]}
            )
        assert refused.code == -32004 and "type /resume to continue" in refused.data["detail"]


@DOORS
def test_a_client_that_disappears_leaves_its_task_suspended(open_peer, acp_key):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        running, task = start_prompt(peer, sid)
        peer.call("session/suspend", {"sessionId": sid, "reason": "overnight"})
        running.result(timeout=30)
        peer.proc.kill()  # the editor crashes
    task = Task.objects.get(pk=task.id)
    assert task.state == "paused-by-client" and task.current_suspension.reason == "overnight"
    with open_peer(acp_key) as peer:  # a new editor finds it as it was
        [listed] = peer.call("session/list", {})["sessions"]
        assert listed["sessionId"] == sid and listed["title"] == "shop: Roll out 2.14"


# --- both directions with the dashboard ------------------------------------------------------


@DOORS
def test_dashboard_resume_reaches_the_editor_and_editor_suspend_reaches_the_board(
    open_peer, acp_key, op, asgi_server
):
    _, board_key = api_keys.create_key("board", ["read", "operator"])  # sees every tenant
    board = BoardSocket(asgi_server.replace("http://", "ws://") + "/ws/agui/", board_key)
    try:
        with open_peer(acp_key, opted_in=True) as peer:
            sid = peer.new_session(CWD)
            running, task = start_prompt(peer, sid, "Deploy the shop")
            # editor → board: the pause shows up live with its reason and its origin
            peer.call("session/suspend", {"sessionId": sid, "reason": "waiting for QA"})
            running.result(timeout=30)
            wait_for(
                lambda: (
                    (
                        (
                            board.recv()
                            and (board.state["view"]["tasks"].get(task.id) or {}).get("pause")
                        )
                        or {}
                    ).get("reason")
                    == "waiting for QA"
                ),
                what="the pause on the board",
            )
            task = Task.objects.get(pk=task.id)
            assert (task.origin, task.origin_ref) == ("acp", sid)
            assert task.origin_title == "shop: Deploy the shop"
            # dashboard → editor: an operator resumes it on the task page
            handle = task.current_suspension.handle
            response = op.post(
                f"/tasks/{task.id}/resume",
                {"handle": handle, "resume_input": "", "continue_transcript": "on"},
            )
            assert response.status_code in (200, 302), response.content[:300]
            resumed = peer.wait_update(sid, kind("resumed"))
            assert resumed["handle"] == handle and resumed["cause"] == "explicit_resume"
            assert Suspension.objects.get(handle=handle).ended_by == "operator:ana"
    finally:
        board.close()


@DOORS
def test_an_operator_hold_is_not_lifted_by_a_standard_client(open_peer, acp_key):
    with open_peer(acp_key, opted_in=False) as peer:
        sid = peer.new_session(CWD)
        running, task = start_prompt(peer, sid)
        services.pause_task(task.id, actor=services.Actor("operator", "ana"), reason="incident")
        assert running.result(timeout=30)["stopReason"] == "end_turn"
        peer.wait_update(sid, says("⏸ Suspended by an operator (ana): incident"))
        peer.call("session/resume", {"sessionId": sid, "cwd": CWD, "mcpServers": []})
        assert Task.objects.get(pk=task.id).state == "paused-by-client"
        assert peer.errors == []


@DOORS
def test_another_tenants_editor_cannot_find_a_session(open_peer, acp_key, unchanged):
    """Sessions belong to the key's tenant, like tasks: another tenant's key gets -32002
    (as for a session that does not exist) on every method that names one."""
    _, other = api_keys.create_key("someone-else", ["read", "write"])
    _, ops = api_keys.create_key("ops", ["read", "write", "operator"])
    with open_peer(acp_key) as owner:
        sid = owner.new_session(CWD)
        running, task = start_prompt(owner, sid)
        owner.call("session/suspend", {"sessionId": sid, "reason": "mine"})
        running.result(timeout=30)
    with open_peer(other) as peer, unchanged():
        assert peer.call("session/list", {})["sessions"] == []
        for method, params in [
            ("session/load", {"sessionId": sid, "cwd": CWD, "mcpServers": []}),
            ("session/resume", {"sessionId": sid, "cwd": CWD, "mcpServers": []}),
            ("session/resume", {"sessionId": sid, "cwd": CWD, "handle": "h", "input": 1}),
            ("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}),
            ("session/suspend", {"sessionId": sid}),
            ("session/set_mode", {"sessionId": sid, "modeId": "batch"}),
            ("session/close", {"sessionId": sid}),
        ]:
            assert peer.error(method, params).code == -32002, method
    assert Task.objects.get(pk=task.id).state == "paused-by-client"
    with open_peer(ops) as operator:  # an operator key sees every tenant's sessions
        assert [s["sessionId"] for s in operator.call("session/list", {})["sessions"]] == [sid]
        operator.call("session/resume", {"sessionId": sid, "cwd": CWD, "_meta": {"input": 1}})
    assert Task.objects.get(pk=task.id).state == "working"


@DOORS
def test_revoking_the_key_ends_the_editors_prompt_and_refuses_the_rest(open_peer, acp_key):
    with open_peer(acp_key) as peer:
        sid = peer.new_session(CWD)
        running, _ = start_prompt(peer, sid)
        assert api_keys.revoke("editor")
        with pytest.raises(RequestError) as ended:  # within TASKDECK_REVALIDATE_SECONDS
            running.result(timeout=30)
        assert ended.value.code == -32000 and "revoked" in str(ended.value.data)
        refused = peer.error("session/list", {})
        assert refused.code == -32000 and "revoked" in str(refused.data)


def test_a_replay_past_the_resync_limit_is_refused(open_peer, acp_key):
    with open_peer(acp_key, TASKDECK_RATE_RESYNC="1") as peer:
        sid = peer.new_session(CWD)
        load = {"sessionId": sid, "cwd": CWD, "mcpServers": []}
        peer.call("session/load", load)
        refused = peer.error("session/load", load)
        assert refused.code == -32029 and 1 <= refused.data["retryAfter"] <= 60
