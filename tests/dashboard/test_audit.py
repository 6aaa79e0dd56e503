"""The audit log answers "who did what to which task": the dashboard's own actions (refused
ones included) and what API clients paused, resumed, canceled or answered with their keys,
read from the tasks' history. Its times carry a date and say which clock they are in."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from django.test import Client

from a2a import api_keys
from a2a.models import Task
from tests.dashboard.conftest import late_night_entry

pytestmark = pytest.mark.django_db(transaction=True)


def call(token: str, method: str, params: dict) -> dict:
    """One JSON-RPC call through the real endpoint, as an API client makes it."""
    response = Client().post(
        "/a2a/",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def rows(page: str) -> list[list[str]]:
    """The audit table as the operator reads it: one list of cell texts per line."""
    out = []
    for tr in re.findall(r'<tr class="outcome-[^"]*">(.*?)</tr>', page, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        out.append([" ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in cells])
    return out


def test_actions_taken_through_the_api_are_in_the_audit_under_the_keys_name(op, make_task):
    _, token = api_keys.create_key("ci-bot", ["read", "write"], owner="test-client")
    held = make_task("working", text="nightly export")
    dropped = make_task("working", text="stale report")
    call(token, "tasks/pause", {"taskId": held.id, "reason": "database maintenance"})
    call(token, "tasks/resume", {"taskId": held.id})
    call(token, "tasks/cancel", {"id": dropped.id, "reason": "superseded by 2.15"})
    assert Task.objects.get(pk=dropped.id).state == "canceled"

    lines = rows(op.get("/audit").content.decode())
    by_key = [(r[1], r[2], r[3], r[4], r[5]) for r in lines if r[1] == "apikey:ci-bot"]
    assert by_key == [  # newest first
        ("apikey:ci-bot", "cancel API", dropped.id, "superseded by 2.15", "ok"),
        ("apikey:ci-bot", "resume API", held.id, "—", "ok"),
        ("apikey:ci-bot", "pause API", held.id, "database maintenance", "ok"),
    ]
    pause_line = next(r for r in lines if r[2] == "pause API")
    assert pause_line[6].startswith("Paused. The agent finishes its current step, then stops.")

    # the filters work on them as on the dashboard's own entries
    only_cancel = rows(op.get("/audit", {"action": "cancel"}).content.decode())
    assert [(r[1], r[3]) for r in only_cancel] == [("apikey:ci-bot", dropped.id)]
    by_who = rows(op.get("/audit", {"who": "ci-bot"}).content.decode())
    assert len(by_who) == 3
    by_task = rows(op.get("/audit", {"task": held.id}).content.decode())
    assert [r[2] for r in by_task] == ["resume API", "pause API"]
    by_text = rows(op.get("/audit", {"q": "maintenance"}).content.decode())
    assert [r[2] for r in by_text] == ["pause API"]
    refused = op.get("/audit", {"outcome": "refused"}).content.decode()
    assert rows(refused) == [] and "No entries match these filters." in refused


def test_the_dashboards_own_actions_are_listed_once(op, make_task):
    task = make_task("working")
    op.post(f"/tasks/{task.id}/pause", {"reason": "release freeze", "mode": "finish_step"})
    lines = rows(op.get("/audit", {"task": task.id}).content.decode())
    assert [(r[1], r[2], r[4]) for r in lines] == [("operator:ana", "pause", "release freeze")]


def test_audit_times_show_the_date_and_say_they_are_utc(op, transactional_db):
    late_night_entry()
    page = op.get("/audit").content.decode()
    assert rows(page)[0][0] == "2026-01-02 23:30:05 UTC"
    when = r"<th[^>]*><a[^>]*>When</a> <span[^>]*data-zone[^>]*>\(UTC\)</span></th>"
    assert re.search(when, page)
