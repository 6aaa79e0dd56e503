"""Re-run and retry from the failed step on the task page (issue 29): a new task with the
same input, linked both ways, audited; refused clearly (and audited) where they cannot
apply. The retry's replay by real workers is tested in tests/runtime/test_retry_from_step.py.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from a2a import services, skills
from a2a.models import Task
from a2a.runtime.models import StepRecord
from dashboard.models import AuditEntry
from tests.conftest import AGENT, CLIENT, query_plan, statements, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def audit_of(task_id: str, action: str) -> list[tuple[str, str]]:
    rows = AuditEntry.objects.filter(task_id=task_id, action=action).order_by("id")
    return [(a.outcome, a.detail) for a in rows]


def steps(task_id: str, *names: str) -> None:
    """What a run recorded, as the runtime's journal holds it (no worker runs here)."""
    for seq, name in enumerate(names, start=1):
        StepRecord.objects.create(
            task_id=task_id, seq=seq, name=name, result={"n": seq}, completed_at=timezone.now()
        )


def test_rerun_makes_a_new_task_with_the_same_input_linked_both_ways(op, make_task):
    original = make_task("working", text="Re-render 20 thumbnails", metadata={"items": 3})
    services.cancel_task(original.id, actor=CLIENT, reason="wrong bucket")
    page = op.get(f"/tasks/{original.id}").content.decode()
    assert 'data-action="rerun"' in page and 'data-action="retry"' not in page

    response = op.post(f"/tasks/{original.id}/rerun")
    new = Task.objects.exclude(pk=original.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/tasks/{new.id}"
    assert (new.state, new.skill, new.context_id) == ("submitted", "approval", original.context_id)
    assert (new.rerun_of_id, new.rerun_kind, new.metadata) == (original.id, "rerun", {"items": 3})
    assert new.owner == original.owner == "key:test-client"  # still the client's task
    first = new.messages.get(seq=1)
    assert first.parts == original.messages.get(seq=1).parts
    assert first.reference_task_ids == [original.id]
    assert new.origin == "dashboard" and new.origin_title == f"Re-run of {original.id[:8]}"

    new_page = op.get(f"/tasks/{new.id}").content.decode()
    assert "Re-run of" in new_page and f'href="/tasks/{original.id}"' in new_page
    assert "a re-run of" in new_page  # the flash
    old_page = op.get(f"/tasks/{original.id}").content.decode()
    assert "Re-run as" in old_page and f'href="/tasks/{new.id}"' in old_page
    assert audit_of(original.id, "rerun") == [("ok", f"re-run as {new.id}")]


def test_rerun_is_refused_while_the_task_runs(op, make_task, unchanged):
    task = make_task("paused-by-client")
    assert 'data-action="rerun"' not in op.get(f"/tasks/{task.id}").content.decode()
    with unchanged():
        response = op.post(f"/tasks/{task.id}/rerun")
    assert response.status_code == 409
    said = "task is paused-by-client; only an ended task can be re-run (cancel it first)"
    assert said in response.content.decode()
    assert audit_of(task.id, "rerun") == [("refused", said)]


def test_a_viewer_cannot_rerun_and_is_audited(view_only, make_task, unchanged):
    task = make_task("failed")
    assert 'data-action="rerun"' not in view_only.get(f"/tasks/{task.id}").content.decode()
    with unchanged():
        assert view_only.post(f"/tasks/{task.id}/rerun").status_code == 403
        assert view_only.post(f"/tasks/{task.id}/retry").status_code == 403
    assert audit_of(task.id, "rerun")[0][0] == audit_of(task.id, "retry")[0][0] == "refused"


def test_a_hosted_acp_agents_task_is_not_rerun(op, make_task, unchanged):
    card = {"id": "hosted-x", "name": "Hosted", "description": "", "tags": [skills.HOSTED_TAG]}
    provider = skills.register(lambda: [card], runs_own_tasks=True)
    try:
        task = services.create_task(user_message(), actor=CLIENT, skill="hosted-x")
        services.cancel_task(task.id, actor=CLIENT, reason="done with it")
        page = op.get(f"/tasks/{task.id}").content.decode()
        assert 'data-action="rerun"' not in page and "send the session a new prompt" in page
        with unchanged():
            assert op.post(f"/tasks/{task.id}/rerun").status_code == 409
    finally:
        skills.PROVIDERS.remove(provider)
        skills.RUN_ELSEWHERE.remove(provider)


def test_retry_carries_the_recorded_steps_but_not_the_output(op, make_task):
    original = make_task("working")
    steps(original.id, "text", "item 0", "artifact:results", "progress", "item 1")
    services.fail_task(original.id, actor=AGENT, reason="RuntimeError: item 2 broke")
    page = op.get(f"/tasks/{original.id}").content.decode()
    assert 'data-action="retry"' in page and "replays the 5 steps" in page

    response = op.post(f"/tasks/{original.id}/retry")
    new = Task.objects.exclude(pk=original.pk).get()
    assert response["Location"] == f"/tasks/{new.id}" and new.rerun_kind == "retry"
    carried = list(StepRecord.objects.filter(task=new).values_list("seq", "name", "result"))
    assert carried == [(2, "item 0", {"n": 2}), (5, "item 1", {"n": 5})]
    assert "Retry of" in op.get(f"/tasks/{new.id}").content.decode()
    assert audit_of(original.id, "retry") == [("ok", f"retried from its failed step as {new.id}")]


@pytest.mark.parametrize(
    ("state", "recorded", "said"),
    [
        ("completed", True, "task is completed; only a failed task can be retried"),
        ("failed", False, "its run recorded no steps to retry from; re-run it instead"),
        ("working", True, "task is working; only an ended task can be re-run"),
    ],
)
def test_retry_is_refused_clearly(op, make_task, unchanged, state, recorded, said):
    task = make_task(state)
    if recorded:
        steps(task.id, "item 0")
    assert 'data-action="retry"' not in op.get(f"/tasks/{task.id}").content.decode()
    with unchanged():
        response = op.post(f"/tasks/{task.id}/retry")
    assert response.status_code == 409 and said in response.content.decode()
    [(outcome, detail)] = audit_of(task.id, "retry")
    assert outcome == "refused" and said in detail


def test_an_unknown_task_is_a_404_and_audited(op):
    assert op.post("/tasks/no-such-task/rerun").status_code == 404
    assert audit_of("no-such-task", "rerun") == [("refused", "no such task")]


def test_rerun_needs_a_post(op, make_task):
    task = make_task("failed")
    assert op.get(f"/tasks/{task.id}/rerun").status_code == 405
    assert not Task.objects.exclude(pk=task.pk).exists()


def test_a_double_click_makes_one_rerun(op, make_task):
    """Both posts carry what the page showed (no re-run yet): the second, in order behind
    the first on the original's row lock, finds one made meanwhile and is refused."""
    task = make_task("canceled")
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert '<input type="hidden" name="latest" value="">' in page
    first = op.post(f"/tasks/{task.id}/rerun", {"latest": ""})
    second = op.post(f"/tasks/{task.id}/rerun", {"latest": ""})
    [made] = Task.objects.filter(rerun_of=task)
    assert first.status_code == 302 and second.status_code == 409
    said = f"it was re-run meanwhile as {made.id}; open that task, or reload this page"
    assert said in second.content.decode()
    assert [o for o, _ in audit_of(task.id, "rerun")] == ["ok", "refused"]
    page = op.get(f"/tasks/{task.id}").content.decode()  # reloaded: once more, on purpose
    assert f'<input type="hidden" name="latest" value="{made.id}">' in page
    assert op.post(f"/tasks/{task.id}/rerun", {"latest": made.id}).status_code == 302
    assert Task.objects.filter(rerun_of=task).count() == 2


def test_the_page_reads_a_tasks_reruns_from_the_partial_index(op, make_task):
    """The task page's "Re-run as …" reads `task_rerun_of`, which holds re-runs only (a2a
    0016): on the whole-column index of a million NULLs SQLite's planner, after ANALYZE,
    scanned every task instead (32 ms at 100,000 tasks, bench/scale.py)."""
    original = make_task("working")
    services.cancel_task(original.id, actor=CLIENT, reason="again")
    assert op.post(f"/tasks/{original.id}/rerun").status_code == 302
    with statements() as seen:
        page = op.get(f"/tasks/{original.id}").content.decode()
    assert "Re-run as" in page
    (sql, params), *_ = [s for s in seen if '"a2a_task"."rerun_of_id" =' in s[0]]
    plan = query_plan(sql, params)
    assert "task_rerun_of" in plan, plan
