"""The task page's timeline: every kind of moment in order, with causes, read in a
constant number of queries however long the history."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from a2a import services
from a2a.conditions import Conditions
from dashboard import timeline
from tests.conftest import AGENT, CLIENT
from tests.dashboard.test_inbox import asking

pytestmark = pytest.mark.django_db(transaction=True)


def busy_history(task_id: str, rounds: int) -> None:
    for i in range(rounds):
        services.emit_text(task_id, f"step {i}", actor=AGENT)
        services.report_progress(task_id, i + 1, rounds, actor=AGENT)
        services.add_artifact(
            task_id,
            actor=AGENT,
            parts=[{"kind": "text", "text": f"line {i}"}],
            name="log.txt",
            artifact_id="log",
            append=i > 0,
        )
        services.pause_task(task_id, actor=CLIENT, reason=f"hold {i}")
        services.resume_task(task_id, actor=CLIENT)


def queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


def test_the_timeline_reads_in_a_constant_number_of_queries(op, make_task):
    short, long = make_task("working"), make_task("working")
    busy_history(short.id, 1)
    busy_history(long.id, 12)
    assert queries(lambda: timeline.build(short.id)) == queries(lambda: timeline.build(long.id))
    assert queries(lambda: timeline.build(long.id)) == 6
    page = queries(lambda: op.get(f"/tasks/{short.id}"))
    assert queries(lambda: op.get(f"/tasks/{long.id}")) == page


def test_the_timeline_tells_the_story(op, make_task):
    task, interrupt = asking(
        make_task,
        request={"title": "Approve the plan", "fields": [{"name": "ok", "type": "approval"}]},
        text="Roll out 2.14",
    )
    op.post(f"/inbox/{interrupt.pk}/answer", {"v.ok": "approve", "v.ok.comment": "ship it"})
    services.park_task(
        task.id,
        actor=AGENT,
        reason="waiting for ci.build.completed:7",
        conditions=Conditions(on_event="ci.build.completed:7"),
    )
    op.post(f"/tasks/{task.id}/pause", {"reason": "release freeze", "mode": "finish_step"})
    op.post(f"/tasks/{task.id}/resume", {"continue_transcript": "on"})
    services.report_progress(task.id, 1, 2, actor=AGENT)
    services.report_progress(task.id, 2, 2, actor=AGENT)
    services.add_artifact(task.id, actor=AGENT, parts=[{"kind": "text", "text": "ok"}], name="r")
    services.complete_task(task.id, actor=AGENT, text="Rolled out.")
    entries = timeline.build(task.id).entries
    titles = [e.title for e in entries]
    assert titles == [
        "Created",
        "Started",
        "Asked: Approve the plan",
        "Approved",
        "Paused by the agent (parked)",
        "Paused",
        "Resumed",
        "Progress 2 of 2, artifacts updated",
        "Completed",
    ]
    by = {e.title: e for e in entries}
    assert ("ok", "approve — “ship it”") in by["Approved"].details
    assert by["Approved"].actor == "operator:ana"
    assert ("waits for event", "ci.build.completed:7") in by["Paused by the agent (parked)"].details
    assert ("ended", "superseded by operator:ana") in by["Paused by the agent (parked)"].details
    assert ("holds", "the agent's own wait (its conditions stop firing)") in by["Paused"].details
    assert by["Resumed"].details[0] == ("cause", "resumed by hand")
    output = by["Progress 2 of 2, artifacts updated"]
    assert output.count == 3
    assert output.details == [("artifacts", "r (1 update)"), ("progress", "2 of 2")]
    assert by["Completed"].text == "Rolled out." and by["Completed"].state == "completed"
    html = op.get(f"/tasks/{task.id}").content.decode()
    order = [html.index(f"<strong>{t}</strong>") for t in ("Asked: Approve the plan", "Resumed")]
    assert order == sorted(order) and "<strong>Completed</strong>" in html


def test_a_retry_after_an_infrastructure_fault_reads_as_a_retry_not_a_failure(op, make_task):
    task = make_task("working")
    at = timezone.now()
    services.note_retry(
        task.id, actor=AGENT, attempt=2, retry_at=at, error="OperationalError: server closed"
    )
    entry = timeline.build(task.id).entries[-1]
    assert entry.title == "Retrying after an infrastructure fault"
    assert ("fault", "OperationalError: server closed") in entry.details
    assert ("attempt", "2") in entry.details
    assert entry.state == ""  # the task's state did not change
    page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Retrying after an infrastructure fault" in page
    assert "tl-retry" in page


def test_no_retry_is_noted_on_a_finished_task(make_task):
    task = make_task("completed")
    assert (
        services.note_retry(task.id, actor=AGENT, attempt=1, retry_at=timezone.now(), error="x")
        is None
    )
    assert not task.events.filter(kind="retrying").exists()
