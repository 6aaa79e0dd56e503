"""Issue 15, feature 6: typed resume input. When the pausing side says what it expects
back (an agent's declared fields, or a timeout's preset input), the task page's resume
form shows those fields, checked like inbox answers; raw JSON only as the fallback."""

from __future__ import annotations

import re

import pytest

from a2a import services
from a2a.models import Suspension, Task
from dashboard.models import AuditEntry
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTS = {"fields": [{"name": "budget", "type": "integer", "label": "Extra budget (tokens)",
                       "help": "Added to the budget."}]}  # fmt: skip


def resume_form(html: str) -> str:
    match = re.search(
        r'<form class="card action"[^>]* action="/tasks/[^"]+/resume".*?</form>',
        html,
        re.S,
    )
    assert match
    return match.group(0)


def test_declared_fields_replace_the_json_box_and_are_checked(op, make_task):
    task = make_task("working")
    services.pause_task(
        task.id, actor=CLIENT, reason="over budget", metadata={"resumeInput": EXPECTS}
    )
    form = resume_form(op.get(f"/tasks/{task.id}").content.decode())
    assert 'name="v.budget"' in form and "Extra budget (tokens)" in form
    assert 'name="resume_input"' not in form

    refused = op.post(f"/tasks/{task.id}/resume", {"v.budget": "lots", "continue_transcript": "on"})
    assert refused.status_code == 400
    form = resume_form(refused.content.decode())
    assert re.search(r'id="f-resume-budget-err"\s*>[^<]*must be an integer', form), form
    assert 'value="lots"' in form  # what was typed stays
    assert Task.objects.get(pk=task.id).state == "paused-by-client"
    assert AuditEntry.objects.filter(action="resume", outcome="refused").count() == 1

    done = op.post(f"/tasks/{task.id}/resume", {"v.budget": "200", "continue_transcript": "on"})
    assert done.status_code == 302
    assert Suspension.objects.get(task=task).resume_input == {"budget": 200}
    assert Task.objects.get(pk=task.id).state == "working"


def test_a_timeout_preset_becomes_prefilled_fields(op, make_task):
    task = make_task("working")
    preset = {"replicas": 3, "note": "after the freeze", "dry": False}
    when = {"timeout": {"durationMinutes": 30, "onTimeout": "resume_with_input", "input": preset}}
    services.pause_task(task.id, actor=CLIENT, reason="freeze", resume_when=when)
    form = resume_form(op.get(f"/tasks/{task.id}").content.decode())
    assert re.search(r'name="v.replicas" value="3"', form) and 'value="after the freeze"' in form
    assert re.search(r'name="v.dry" value="false" checked', form)
    assert "what its deadline would send" in form
    op.post(f"/tasks/{task.id}/resume", {"v.replicas": "5", "v.note": "go", "v.dry": "true",
                                         "continue_transcript": "on"})  # fmt: skip
    assert Suspension.objects.get(task=task).resume_input == {
        "replicas": 5,
        "note": "go",
        "dry": True,
    }


def test_without_a_declaration_the_json_box_stays(op, make_task):
    task = make_task("working")
    services.pause_task(task.id, actor=CLIENT, reason="hold")
    form = resume_form(op.get(f"/tasks/{task.id}").content.decode())
    assert 'name="resume_input"' in form and 'name="v.' not in form


@pytest.mark.parametrize("action", ["resume", "pause"])
def test_acting_on_a_task_that_does_not_exist_is_a_refused_404(op, action):
    """As the other task actions: a 404 (it was a 500 for resume once the form could be
    typed), the refusal audited, no task made."""
    post = {"reason": "x", "mode": "finish_step", "v.budget": "1"}
    assert op.post(f"/tasks/no-such-task/{action}", post).status_code == 404
    refused = AuditEntry.objects.get(action=action)
    assert (refused.task_id, refused.outcome) == ("no-such-task", "refused")
    assert not Task.objects.exists()
