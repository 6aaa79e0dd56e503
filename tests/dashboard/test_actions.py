"""Pause, resume, cancel and emit from the task page: through the services, with a reason
where one is needed, and an audit entry for every attempt, refused ones included."""

from __future__ import annotations

import re

import pytest

from a2a import services
from a2a.conditions import Conditions
from a2a.models import Suspension, Task
from dashboard.models import AuditEntry
from tests.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)


def audit_of(task_id: str) -> list[tuple[str, str, str]]:
    return list(
        AuditEntry.objects.filter(task_id=task_id)
        .order_by("id")
        .values_list("action", "outcome", "reason")
    )


def test_pause_needs_a_reason_and_the_task_keeps_working(op, make_task, unchanged):
    task = make_task("working")
    with unchanged():
        response = op.post(f"/tasks/{task.id}/pause", {"reason": "  ", "mode": "finish_step"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Give a reason: it is recorded with the action." in html
    assert 'id="pause-reason-err"' in html and 'aria-invalid="true"' in html
    assert audit_of(task.id) == [("pause", "refused", "")]


def test_pause_with_a_reason_shows_who_why_and_since(op, make_task):
    task = make_task("working", text="Re-index the search cluster")
    response = op.post(
        f"/tasks/{task.id}/pause",
        {"reason": "release freeze", "mode": "interrupt_immediate"},
        follow=True,
    )
    task.refresh_from_db()
    assert task.state == "paused-by-client"
    s = task.current_suspension
    assert (s.requested_by, s.reason, s.mode) == (
        "operator:ana",
        "release freeze",
        "interrupt_immediate",
    )
    html = response.content.decode()
    assert "Paused by operator:ana" in html and "release freeze" in html
    assert "No deadline" in html and 'data-action="resume"' in html
    assert audit_of(task.id) == [("pause", "ok", "release freeze")]


def test_a_pause_with_a_deadline_counts_down_and_says_what_happens_then(op, make_task):
    task = make_task("working")
    op.post(
        f"/tasks/{task.id}/pause",
        {"reason": "wait", "mode": "finish_step", "timeout_minutes": "30", "on_timeout": "fail"},
    )
    html = op.get(f"/tasks/{task.id}").content.decode()
    s = Suspension.objects.get(task=task)
    assert s.deadline is not None and (s.conditions or {})["timeout"]["onTimeout"] == "fail"
    assert "data-countdown=" in html and "then it <strong>fails</strong>" in html


def test_a_parked_task_says_what_it_waits_for_and_the_event_can_be_sent(op, make_task):
    task = make_task("working")
    services.park_task(
        task.id,
        actor=AGENT,
        reason="waiting for ci.build.completed:1234",
        conditions=Conditions(on_event="ci.build.completed:1234", duration_minutes=30),
    )
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert (
        "Parked by the agent" in html and "waits for event:</span> ci.build.completed:1234" in html
    )
    assert 'value="ci.build.completed:1234"' in html  # the emit form is prefilled
    assert "Hold (operator pause)" in html
    response = op.post(
        f"/tasks/{task.id}/emit",
        {"name": "ci.build.completed:1234", "payload": '{"status": "green"}'},
        follow=True,
    )
    task.refresh_from_db()
    assert task.state == "working"
    assert "woke 1 task(s)" in response.content.decode()
    s = Suspension.objects.get(task=task)
    assert s.cause == "external_event" and s.resume_input["payload"] == {"status": "green"}
    assert audit_of(task.id) == [("emit-event", "ok", "")]


def test_bad_event_payload_is_a_form_error(op, make_task, unchanged):
    task = make_task("paused-by-agent")
    with unchanged():
        response = op.post(f"/tasks/{task.id}/emit", {"name": "ci done", "payload": "[1]"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "An event name has no spaces." in html and "Must be a JSON object" in html


def test_resume_with_input_and_a_fresh_transcript(op, make_task):
    task = make_task("paused-by-client")
    handle = task.current_suspension.handle
    op.post(
        f"/tasks/{task.id}/resume",
        {"handle": handle, "resume_input": '{"budget": 200}'},  # checkbox unticked
    )
    task.refresh_from_db()
    assert task.state == "working"
    s = Suspension.objects.get(handle=handle)
    assert s.resume_input == {"budget": 200} and s.continue_transcript is False
    assert s.ended_by == "operator:ana" and s.cause == "explicit_resume"
    assert audit_of(task.id) == [("resume", "ok", "")]


def test_resume_input_must_be_json(op, make_task, unchanged):
    task = make_task("paused-by-client")
    with unchanged():
        response = op.post(f"/tasks/{task.id}/resume", {"resume_input": "{budget: 200"})
    assert response.status_code == 400
    assert "Not valid JSON" in response.content.decode()
    assert audit_of(task.id)[0][:2] == ("resume", "refused")


def test_resuming_from_a_stale_page_is_refused_with_a_sentence(op, make_task, unchanged):
    task = make_task("paused-by-client")
    old = task.current_suspension.handle
    services.resume_task(task.id, actor=AGENT)
    services.pause_task(task.id, actor=AGENT, reason="again")
    new = Task.objects.get(pk=task.id).current_suspension.handle
    with unchanged():
        response = op.post(
            f"/tasks/{task.id}/resume", {"handle": old, "resume_input": '{"budget": 7}'}
        )
    assert response.status_code == 409
    html = response.content.decode()
    assert "Nothing was sent: the pause you typed this for ended" in html
    assert "press Resume again to send it to the current pause" in html
    # what was typed is kept, and the form now names the pause on screen (issue 29)
    assert "{&quot;budget&quot;: 7}" in html
    assert f'name="handle" value="{new}"' in html and old not in html
    done = make_task("completed")
    with unchanged():
        response = op.post(f"/tasks/{done.id}/resume", {})
    assert "not paused, so it cannot be resumed" in response.content.decode()
    assert [a[1] for a in audit_of(task.id) + audit_of(done.id)] == ["refused", "refused"]


def test_cancel_names_the_task_needs_a_reason_and_ends_it(op, make_task, unchanged):
    task = make_task("input-required", text="Rotate the TLS certificates")
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "Cancel <strong>“Rotate the TLS certificates”</strong>" in html
    with unchanged():
        refused = op.post(f"/tasks/{task.id}/cancel", {"reason": ""})
    assert refused.status_code == 400 and "Give a reason" in refused.content.decode()
    op.post(f"/tasks/{task.id}/cancel", {"reason": "superseded by 2.15"})
    task.refresh_from_db()
    assert task.state == "canceled"
    assert task.events.last().reason == "superseded by 2.15"
    assert audit_of(task.id) == [("cancel", "refused", ""), ("cancel", "ok", "superseded by 2.15")]
    html = op.get(f"/tasks/{task.id}").content.decode()
    # an ended task offers a re-run only (issue 29), nothing that acts on it
    assert re.findall(r'data-action="([^"]+)"', html) == ["rerun"]


def test_an_unknown_task_is_a_404_and_its_action_is_audited(op, transactional_db):
    assert op.get("/tasks/nope").status_code == 404
    assert op.post("/tasks/nope/cancel", {"reason": "x"}).status_code == 404
    assert audit_of("nope") == [("cancel", "refused", "x")]


def test_the_audit_page_lists_and_filters_entries(op, make_task):
    task = make_task("working")
    op.post(f"/tasks/{task.id}/pause", {"reason": "", "mode": "finish_step"})
    op.post(f"/tasks/{task.id}/pause", {"reason": "release freeze", "mode": "finish_step"})
    page = op.get("/audit").content.decode()
    assert page.count("<td>operator:ana</td>") == 2 and "release freeze" in page
    refused = op.get("/audit?outcome=refused").content.decode()
    assert "release freeze" not in refused and "Give a reason" in refused
    assert "release freeze" in op.get("/audit?q=freeze").content.decode()
    assert "No entries" in op.get("/audit?who=someone-else").content.decode()


def test_audit_filters_survive_pasted_novels_and_nul(op, make_task):
    task = make_task("working")
    op.post(f"/tasks/{task.id}/pause", {"reason": "", "mode": "finish_step"})
    for params in ({"q": "x" * 60_000}, {"who": "a\x00b"}, {"task": "t" * 5000}):
        response = op.get("/audit", params)
        assert response.status_code == 200
        assert "No entries" in response.content.decode()


def test_values_the_database_cannot_store_are_form_errors(op, make_task, unchanged):
    task = make_task("paused-by-agent")
    with unchanged():
        response = op.post(f"/tasks/{task.id}/emit", {"name": "a.b", "payload": '{"a": "\\u0000"}'})
        assert response.status_code == 400
        assert "Cannot be stored: a contains a NUL character." in response.content.decode()
        response = op.post(f"/tasks/{task.id}/resume", {"resume_input": '"\\ud800"'})
        assert "unpaired surrogate" in response.content.decode()
        assert op.get("/tasks/a%00b").status_code == 404
        assert op.post("/tasks/a%00b/cancel", {"reason": "x"}).status_code == 404
        for payload, why in (
            ("[" * 100_000, "nested too deeply"),
            ('{"a": 1e400}', "out of range"),
        ):
            response = op.post(f"/tasks/{task.id}/emit", {"name": "a.b", "payload": payload})
            assert response.status_code == 400 and why in response.content.decode()
