"""What a pause expects back (issue 15, feature 6): the pausing side may declare the resume
input it wants as input-request fields (`metadata.resumeInput`); the declaration is
checked when the pause opens, a resume that brings input is validated against it like an
answer (refused, and nothing changes), and a timeout's preset input must fit it."""

from __future__ import annotations

import pytest

from a2a import services
from a2a.errors import ValidationFailed
from a2a.models import Suspension, Task
from tests.conftest import CLIENT

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTS = {"fields": [{"name": "budget", "type": "integer", "label": "Extra budget"}]}


def paused(make_task, expects=EXPECTS) -> Task:
    task = make_task("working")
    services.pause_task(
        task.id, actor=CLIENT, reason="over budget", metadata={"resumeInput": expects}
    )
    return Task.objects.get(pk=task.id)


def test_a_declared_expectation_is_kept_in_its_canonical_form(make_task):
    task = paused(make_task)
    spec = task.current_suspension.metadata["resumeInput"]
    assert spec == {"fields": [{"name": "budget", "type": "integer", "label": "Extra budget"}]}


@pytest.mark.parametrize(
    ("expects", "path"),
    [
        ("budget", "metadata.resumeInput"),
        ({"fields": [{"name": "budget", "type": "money"}]}, "metadata.resumeInput.fields.0.type"),
        ({"fields": [], "extra": 1}, "metadata.resumeInput"),
    ],
)
def test_a_bad_declaration_is_refused_and_nothing_pauses(make_task, expects, path):
    task = make_task("working")
    with pytest.raises(ValidationFailed) as refused:
        services.pause_task(task.id, actor=CLIENT, reason="x", metadata={"resumeInput": expects})
    assert path in refused.value.errors, refused.value.errors
    assert Task.objects.get(pk=task.id).state == "working"
    assert not Suspension.objects.filter(task=task).exists()


@pytest.mark.parametrize(
    ("given", "path"),
    [({"budget": "lots"}, "input.budget"), ({"budgte": 5}, "input.budgte"), (7, "input")],
)
def test_input_that_does_not_fit_is_refused_and_the_task_stays_paused(make_task, given, path):
    task = paused(make_task)
    with pytest.raises(ValidationFailed) as refused:
        services.resume_task(task.id, actor=CLIENT, resume_input=given)
    assert path in refused.value.errors, refused.value.errors
    task.refresh_from_db()
    assert task.state == "paused-by-client" and task.current_suspension.is_open


def test_input_that_fits_resumes_and_so_does_no_input(make_task):
    task = paused(make_task)
    services.resume_task(task.id, actor=CLIENT, resume_input={"budget": 200})
    susp = Suspension.objects.get(task=task)
    assert (susp.ending, susp.resume_input) == ("resumed", {"budget": 200})
    again = paused(make_task)
    services.resume_task(again.id, actor=CLIENT)
    assert Task.objects.get(pk=again.id).state == "working"


def test_a_timeout_preset_must_fit_the_declaration(make_task):
    task = make_task("working")
    when = {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_input",
                        "input": {"budget": "more"}}}  # fmt: skip
    with pytest.raises(ValidationFailed) as refused:
        services.pause_task(task.id, actor=CLIENT, reason="x", resume_when=when,
                            metadata={"resumeInput": EXPECTS})  # fmt: skip
    assert "resumeWhen.timeout.input.budget" in refused.value.errors, refused.value.errors
    when["timeout"]["input"] = {"budget": 50}
    services.pause_task(task.id, actor=CLIENT, reason="x", resume_when=when,
                        metadata={"resumeInput": EXPECTS})  # fmt: skip
    assert Task.objects.get(pk=task.id).state == "paused-by-client"


def test_over_json_rpc_a_misfit_resume_is_invalid_params(make_task, rpc):
    task = paused(make_task)
    error = rpc.error("tasks/resume", {"taskId": task.id, "input": {"budget": "lots"}})
    assert error["code"] == -32602, error
    assert "budget" in str(error.get("data")), error
    assert Task.objects.get(pk=task.id).state == "paused-by-client"
