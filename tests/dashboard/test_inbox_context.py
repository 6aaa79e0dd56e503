"""Issue 15, feature 2: an inbox item shows what it asks to approve — the artifact the
agent attached, the request's explanation, the task's recent timeline — without leaving
the inbox, for every pending request in a fixed number of queries."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from a2a import services
from dashboard import context
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def asking(title: str, plan: str) -> str:
    task = services.create_task(user_message(title), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    services.emit_text(task.id, "drafting the plan", actor=AGENT)
    services.add_artifact(
        task.id, actor=AGENT, name="plan.md", parts=[{"kind": "text", "text": plan}]
    )
    services.request_input(
        task.id, actor=AGENT, explanation="Approve the plan?", request=APPROVAL_REQUEST
    )
    return task.id


def card(page: str, task_id: str) -> str:
    match = re.search(
        rf'<article class="inbox-item[^>]*data-task="{task_id}".*?</article>', page, re.S
    )
    assert match, task_id
    return match.group(0)


def test_each_item_shows_the_attached_plan_and_what_led_there(op):
    first = asking("Roll out 2.22", "1. drain eu-west\n2. <script>alert(1)</script> upgrade")
    second = asking("Roll out 2.23", "x" * 5000)
    page = op.get("/inbox").content.decode()
    one = card(page, first)
    assert "plan.md" in one and "1. drain eu-west" in one
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in one and "<script>alert" not in one
    assert "Approve the plan?" in one  # the request's explanation
    block = re.search(r'<details class="item-recent">.*?</details>', one, re.S).group(0)
    recent = " ".join(html.unescape(re.sub(r"<[^>]+>", "", block)).split())
    assert "Started" in recent and "Agent said — drafting the plan" in recent
    assert "Artifact plan.md" in recent and "Asked: Approve the plan" in recent
    two = card(page, second)
    assert "x" * context.ARTIFACT_CHARS in two and "x" * (context.ARTIFACT_CHARS + 1) not in two
    assert "whole artifact" in two and "whole artifact" not in one


def test_the_context_costs_four_queries_for_any_number_of_requests():
    from agui.models import Interrupt

    asking("one", "a")
    with CaptureQueriesContext(connection) as few:
        context.for_requests(list(Interrupt.objects.filter(pending=True)))
    for i in range(6):
        asking(f"more {i}", "b" * i)
    with CaptureQueriesContext(connection) as many:
        found = context.for_requests(list(Interrupt.objects.filter(pending=True)))
    assert len(few) == len(many) == 4, (len(few), len(many))
    assert len(found) == 7 and all(c.artifacts and c.recent for c in found.values())
    assert all(len(c.recent) <= context.EVENTS for c in found.values())
