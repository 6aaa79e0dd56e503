"""Why a task ended (issue 29): the task page's banner and the board's live row say who
cancelled and why, which deadline failed it, the agent's error or who rejected the approval
it stood down after — before the agent's last words, which are not repeated."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from a2a import endings, services
from a2a.models import Suspension
from agui import projection
from agui import selectors as agui_selectors
from dashboard.actions import actor_of
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, answer

pytestmark = pytest.mark.django_db(transaction=True)


def banner(html: str) -> str:
    """The text of the task page's banner region, tags and spaces squeezed."""
    region = re.search(r'<section id="task-banner".*?</section>', html, re.S).group(0)
    return " ".join(re.sub(r"<[^>]+>", " ", region).split())


def view_entry(task_id: str) -> dict:
    projection.project_due()
    return agui_selectors.snapshot([task_id])["view"]["tasks"][task_id]


def test_a_cancel_says_who_and_why_before_the_agents_last_words(op, operator, make_task):
    task = make_task("working")
    services.emit_text(task.id, "Scheduled: continuing in 60 minute(s).", actor=AGENT)
    services.cancel_task(task.id, actor=actor_of(operator), reason="wrong customer")
    text = banner(op.get(f"/tasks/{task.id}").content.decode())
    said = "Canceled by operator:ana: wrong customer"
    assert said in text
    assert text.index(said) < text.index("The agent\u2019s last words: Scheduled: continuing")
    ended = view_entry(task.id)["ended"]
    assert ended == {
        "how": "canceled", "by": "operator:ana", "reason": "wrong customer", "text": said,
    }  # fmt: skip
    assert endings.ending(task.id).text == said


def test_a_cancel_of_a_paused_task_or_an_open_question_says_so(make_task):
    paused, asking = make_task("paused-by-agent"), make_task("input-required")
    services.cancel_task(paused.id, actor=CLIENT, reason="")
    services.cancel_task(asking.id, actor=CLIENT, reason="too late")
    assert endings.ending(paused.id).text == (
        "Canceled by client:test while it was paused (no reason given)"
    )
    assert endings.ending(asking.id).text == (
        "Canceled by client:test while it waited for an answer (the question was withdrawn): "
        "too late"
    )


def test_a_deadline_says_which_wait_timed_out_and_what_it_did(op, make_task):
    task = make_task("working")
    services.emit_text(task.id, "Build 1234 started; waiting for CI.", actor=AGENT)
    conditions = {"onEvent": "ci.done", "timeout": {"durationMinutes": 60, "onTimeout": "fail"}}
    from a2a.conditions import parse_conditions

    services.park_task(
        task.id, actor=AGENT, reason="waiting for CI", conditions=parse_conditions(conditions)
    )
    susp = Suspension.objects.get(task_id=task.id, ended_at__isnull=True)
    Suspension.objects.filter(pk=susp.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    services.expire_suspension(susp.handle, actor=services.SCHEDULER)
    said = (
        "Timed out: the agent's wait (“waiting for CI”) reached its 60-minute deadline, "
        "and its timeout fails the task"
    )
    text = banner(op.get(f"/tasks/{task.id}").content.decode())
    assert "Failed" in text and said.replace("'", "&#x27;") in text
    assert text.index("Timed out") < text.index("Build 1234 started")
    assert view_entry(task.id)["ended"]["how"] == "timed_out"
    assert view_entry(task.id)["ended"]["by"] == "scheduler:taskdeck"


def test_an_agents_error_is_said_once(op, make_task):
    task = make_task("working")
    services.fail_task(task.id, actor=AGENT, reason="ValueError: the model returned garbage")
    text = banner(op.get(f"/tasks/{task.id}").content.decode())
    assert "The agent&#x27;s error: ValueError: the model returned garbage" in text
    assert text.count("the model returned garbage") == 1  # the last words only repeat it
    assert "last words" not in text


def test_a_rejected_approval_says_who_rejected_it(op, make_task):
    task = make_task("working")
    services.request_input(task.id, actor=AGENT, explanation="Approve?", request=APPROVAL_REQUEST)
    answer(task, {"decision": {"decision": "reject", "comment": "too risky"}})
    projection.project_due()  # the answer and the completion in separate passes
    services.complete_task(task.id, actor=AGENT, text="Not sent.")
    said = "Rejected by client:test: “too risky” — the agent stood down"
    text = banner(op.get(f"/tasks/{task.id}").content.decode())
    assert said in text and text.index(said) < text.index("Not sent.")
    assert view_entry(task.id)["ended"]["text"] == said


def test_a_plain_completion_and_a_running_task_say_nothing_more(op, make_task):
    done, running = make_task("completed"), make_task("working")
    assert endings.ending(done.id) is None and endings.ending(running.id) is None
    assert view_entry(done.id)["ended"] is None and view_entry(running.id)["ended"] is None
    assert 'id="task-ending"' not in op.get(f"/tasks/{done.id}").content.decode()


def test_the_ending_is_read_from_the_last_ending_event_in_two_queries_at_most(make_task):
    """Cheap whatever the history: the newest ending event through the (task, id) index,
    and for a completion its latest answer."""
    long = make_task("working")
    for i in range(30):
        services.emit_text(long.id, f"step {i}", actor=AGENT)
    services.cancel_task(long.id, actor=CLIENT, reason="enough")
    with CaptureQueriesContext(connection) as ctx:
        assert endings.ending(long.id).how == "canceled"
    assert len(ctx.captured_queries) == 1


def test_agent_text_in_the_ending_is_escaped(op, make_task):
    task = make_task("working")
    services.fail_task(task.id, actor=AGENT, reason="<img src=x onerror=alert(1)>")
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_inbox_says_how_the_task_of_a_withdrawn_request_ended(op, operator, make_task):
    task = make_task("input-required")
    services.cancel_task(task.id, actor=actor_of(operator), reason="asked the wrong team")
    projection.project_due()
    with CaptureQueriesContext(connection) as few:
        html = op.get("/inbox").content.decode()
    resolved = re.search(r'<ul id="resolved-list".*?</ul>', html, re.S).group(0)
    assert (
        "Withdrawn" in resolved
        and (
            '— <span class="resolved-ending">Canceled by operator:ana while it waited for an '
            "answer (the question was withdrawn): asked the wrong team</span>"
        )
        in resolved
    )
    more = make_task("input-required")
    services.cancel_task(more.id, actor=CLIENT, reason="x")
    projection.project_due()
    with CaptureQueriesContext(connection) as many:
        op.get("/inbox")
    assert len(many.captured_queries) == len(few.captured_queries)  # one query for them all
