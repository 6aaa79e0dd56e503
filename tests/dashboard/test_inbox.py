"""The approvals inbox: forms generated from a request's fields, answers validated by the
services (errors beside the field, the task still waiting), resolved requests as records."""

from __future__ import annotations

import re

import pytest

from a2a import services
from a2a.models import Task
from agui.models import Interrupt
from dashboard.models import AuditEntry
from tests.conftest import AGENT

pytestmark = pytest.mark.django_db(transaction=True)

EVERY_FIELD = {
    "title": "Ship the release?",
    "fields": [
        {"name": "decision", "label": "Decision", "type": "approval", "required": True},
        {"name": "replicas", "label": "Replicas", "type": "integer", "required": True},
        {"name": "ratio", "type": "number"},
        {"name": "region", "type": "enum", "options": ["eu", "us", 3]},
        {"name": "notify", "type": "boolean"},
        {"name": "ticket", "type": "string", "help": "e.g. OPS-12"},
        {"name": "notes", "type": "text"},
    ],
}


def asking(make_task, request=EVERY_FIELD, text="Roll out 2.14") -> tuple[Task, Interrupt]:
    task = make_task("working", text=text)
    services.request_input(task.id, actor=AGENT, explanation="Please decide", request=request)
    return task, Interrupt.objects.get(task=task, pending=True)


def field_error(html: str, interrupt: Interrupt, name: str) -> str:
    match = re.search(
        rf'<p class="field-error" id="f-{re.escape(interrupt.pk)}-{name}-err"\s*>(.*?)</p>',
        html,
        re.S,
    )
    return match.group(1).strip() if match else ""


def test_a_pending_request_is_a_form_built_from_its_fields(op, make_task):
    _task, interrupt = asking(make_task)
    html = op.get("/inbox").content.decode()
    assert "Ship the release?" in html and "Please decide" in html and "Roll out 2.14" in html
    prefix = f"f-{interrupt.pk}-"
    assert 'data-decision="approve"' in html and 'data-decision="reject"' in html
    assert f'id="{prefix}replicas"' in html and 'inputmode="decimal"' in html
    assert f'<select id="{prefix}region"' in html and ">us</option>" in html
    assert 'name="v.notify" value="true"' in html and f'<textarea id="{prefix}notes"' in html
    assert "e.g. OPS-12" in html
    assert 'id="pending-count">1<' in html


def test_bad_values_show_beside_their_fields_and_the_task_keeps_waiting(op, make_task, unchanged):
    task, interrupt = asking(make_task)
    with unchanged():
        response = op.post(
            f"/inbox/{interrupt.pk}/answer",
            {"v.decision": "approve", "v.replicas": "three", "v.ratio": "1.5x", "v.region": "9"},
        )
    assert response.status_code == 400
    html = response.content.decode()
    assert field_error(html, interrupt, "replicas") == "must be an integer"
    assert field_error(html, interrupt, "ratio") == "must be a number"
    assert field_error(html, interrupt, "region").startswith("must be one of: eu, us, 3")
    assert field_error(html, interrupt, "decision") == ""
    assert 'value="three"' in html  # what was typed is kept
    assert Task.objects.get(pk=task.id).state == "input-required"
    entry = AuditEntry.objects.get(task_id=task.id)
    assert entry.outcome == "refused" and "must be an integer" in entry.detail


def test_a_missing_required_value_is_reported_by_the_services(op, make_task, unchanged):
    _task, interrupt = asking(make_task)
    with unchanged():
        response = op.post(f"/inbox/{interrupt.pk}/answer", {"v.replicas": "2"})
    assert field_error(response.content.decode(), interrupt, "decision") == (
        "this field is required"
    )


def test_a_rejection_needs_a_comment(op, make_task, unchanged):
    _task, interrupt = asking(make_task)
    with unchanged():
        response = op.post(f"/inbox/{interrupt.pk}/answer", {"v.decision": "reject"})
    html = response.content.decode()
    assert response.status_code == 400
    assert field_error(html, interrupt, "decision") == (
        "Say why you reject it: a comment is required."
    )


def test_a_good_answer_goes_through_and_becomes_a_read_only_record(op, make_task):
    task, interrupt = asking(make_task)
    response = op.post(
        f"/inbox/{interrupt.pk}/answer",
        {
            "v.decision": "approve",
            "v.decision.comment": "ship it",
            "v.replicas": "3",
            "v.ratio": "0.5",
            "v.region": "2",
            "v.notify": "false",
            "next": "/inbox",
        },
        follow=True,
    )
    task.refresh_from_db()
    assert task.state == "working"
    values = task.events.get(kind="input_provided").data["values"]
    assert values == {
        "decision": {"decision": "approve", "comment": "ship it"},
        "replicas": 3,
        "ratio": 0.5,
        "region": 3,
        "notify": False,
    }
    html = response.content.decode()
    assert "Nothing is waiting for an answer" in html
    record = re.search(r'<span class="resolved-text">(.*?)</span>', html, re.S).group(1)
    assert re.fullmatch(
        r"Approved by operator:ana at <time [^>]+>\d\d:\d\d:\d\d UTC</time>: \u2018ship it\u2019",
        " ".join(record.split()),
    )
    assert AuditEntry.objects.get(task_id=task.id, outcome="ok").action == "answer"


def test_answering_twice_is_refused_politely(op, make_task):
    _task, interrupt = asking(make_task)
    op.post(f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve", "v.replicas": "1"})
    response = op.post(
        f"/inbox/{interrupt.pk}/answer", {"v.decision": "reject", "v.decision.comment": "late"}
    )
    assert response.status_code == 302
    assert AuditEntry.objects.filter(outcome="refused").count() == 1


def test_search_narrows_the_inbox(op, make_task):
    asking(make_task, text="Roll out 2.14")
    asking(make_task, text="Rotate the TLS certificates")
    html = op.get("/inbox?q=tls").content.decode()
    assert "Rotate the TLS certificates" in html and "Roll out 2.14" not in html


def test_the_task_page_offers_the_same_form(op, make_task):
    task, interrupt = asking(make_task)
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert f'action="/inbox/{interrupt.pk}/answer"' in html
    response = op.post(
        f"/inbox/{interrupt.pk}/answer",
        {"v.decision": "approve", "v.replicas": "x", "next": f"/tasks/{task.id}"},
    )
    assert response.status_code == 400
    assert field_error(response.content.decode(), interrupt, "replicas") == "must be an integer"


def test_a_next_url_elsewhere_is_ignored(op, make_task):
    _task, interrupt = asking(make_task)
    response = op.post(
        f"/inbox/{interrupt.pk}/answer",
        {"v.decision": "approve", "v.replicas": "1", "next": "https://evil.example/"},
    )
    assert response["Location"] == "/inbox"
