"""A search finds tasks whose words are all in one field (title, status, pause reason, …),
never scattered over several: bulk "all matching the filter" acts on the same rule, so a
loose match would pause or cancel the wrong tasks."""

from __future__ import annotations

import re

import pytest

from a2a import services
from a2a.models import Task
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def confirmed(html: str) -> list[str]:
    return re.findall(r'data-task="([^"]+)"', html)


def test_all_matching_the_filter_takes_words_from_one_field_only(op, make_task):
    # a batch agent's task whose pause reason mentions a judge: "judge" and "batch" are in
    # two different fields, so "Judge batch" is not about it
    decoy = services.create_task(user_message("Re-render thumbnails"), actor=CLIENT, skill="batch")
    services.start_task(decoy.id, actor=AGENT)
    services.pause_task(decoy.id, actor=CLIENT, reason="the judge asked us to hold")
    wanted = make_task("working", text="Judge the batch of essays")
    data = {"action": "cancel", "scope": "filter", "q": "Judge batch", "reason": "redo"}
    preview = op.post("/bulk", data).content.decode()
    assert confirmed(preview) == [wanted.id]
    assert "<strong>1</strong> will be canceled" in preview
    assert 'Judge the batch of essays <span class="muted small">(matched in title)</span>' in (
        preview
    )
    assert "Re-render thumbnails" not in preview
    # words within one field still match in any order, and fields other than the title count
    by_reason = op.post("/bulk", {**data, "q": "hold judge"}).content.decode()
    assert 'Re-render thumbnails <span class="muted small">(matched in pause reason)</span>' in (
        by_reason
    )
    assert Task.objects.get(pk=decoy.id).state == "paused-by-client"


def test_inbox_search_takes_words_from_one_field_only(op, make_task):
    task = make_task("input-required", text="Deploy release 2.14")  # asks "Approve the plan"

    def shown(q: str) -> int:
        return op.get("/inbox", {"q": q}).content.decode().count('class="inbox-item card"')

    assert shown("deploy 2.14") == 1  # the task's title
    assert shown("approve plan") == 1  # the request's title
    assert shown("approve 2.14") == 0  # one word from each: no single field says both
    assert Task.objects.get(pk=task.id).state == "input-required"
