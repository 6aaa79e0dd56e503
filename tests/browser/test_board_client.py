"""The board's own JavaScript: the JSON-Patch applier agrees with the `jsonpatch` library,
and agent-provided text (an ACP session's title too) stays text."""

from __future__ import annotations

import copy

import jsonpatch
import pytest
from playwright.sync_api import expect

from a2a import services
from tests.conftest import CLIENT, user_message
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)

DOC = {"view": {"tasks": {"a/b": {"v": 1, "l": [1, 2, 3]}, "c~d": {"v": 2}}, "n": None}}
CASES = [
    [{"op": "add", "path": "/view/tasks/x", "value": {"v": 9}}],
    [{"op": "add", "path": "/view/tasks/a~1b/l/1", "value": 7}],
    [{"op": "add", "path": "/view/tasks/a~1b/l/-", "value": 4}],
    [{"op": "remove", "path": "/view/tasks/c~0d"}],
    [{"op": "remove", "path": "/view/tasks/a~1b/l/0"}],
    [{"op": "replace", "path": "/view/tasks/a~1b/v", "value": {"deep": [1]}}],
    [{"op": "replace", "path": "/view/n", "value": 0}],
    [{"op": "move", "from": "/view/tasks/c~0d", "path": "/view/moved"}],
    [{"op": "move", "from": "/view/tasks/a~1b/l/0", "path": "/view/tasks/a~1b/l/2"}],
    [{"op": "copy", "from": "/view/tasks/a~1b", "path": "/view/tasks/copy"}],
    [
        {"op": "test", "path": "/view/tasks/a~1b/l", "value": [1, 2, 3]},
        {"op": "replace", "path": "/view/tasks/a~1b/v", "value": 5},
    ],
    [{"op": "add", "path": "", "value": {"fresh": True}}],
]
FAILING = [
    [{"op": "test", "path": "/view/tasks/a~1b/v", "value": 2}],
    [{"op": "remove", "path": "/view/tasks/missing"}],
    [{"op": "replace", "path": "/view/tasks/missing/v", "value": 1}],
    [{"op": "add", "path": "/view/tasks/a~1b/l/9", "value": 1}],
    [{"op": "move", "from": "/view", "path": "/view/tasks/inside"}],
]


def test_the_patch_applier_matches_jsonpatch(open_as, operator):
    page = open_as(operator, "/")
    for ops in CASES:
        expected = jsonpatch.apply_patch(copy.deepcopy(DOC), ops)
        got = page.evaluate(
            """async ([doc, ops]) => {
                const m = await import('/static/js/patch.js');
                return m.applyPatch(doc, ops);
            }""",
            [DOC, ops],
        )
        assert got == expected, ops
    for ops in FAILING:
        error = page.evaluate(
            """async ([doc, ops]) => {
                const m = await import('/static/js/patch.js');
                try { m.applyPatch(doc, ops); return null; }
                catch (e) { return e instanceof m.PatchError ? 'PatchError' : String(e); }
            }""",
            [DOC, ops],
        )
        assert error == "PatchError", ops


PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


def test_agent_text_is_shown_as_text_on_the_board(open_as, operator, runtime):
    ids = []
    for payload in PAYLOADS:
        task = services.create_task(
            user_message(f"task {payload}"),
            actor=CLIENT,
            skill="scheduled",
            metadata={"skill": "scheduled", "minutes": 60},
            origin=services.Origin("acp", f"sess {payload}", f"shop: {payload}"),
        )
        wait_state(task.id, "paused-by-agent")
        services.pause_task(task.id, actor=CLIENT, reason=f"reason {payload}")
        ids.append(task.id)
    page = open_as(operator, "/")  # an alert() would fail the test (see open_as)
    for task_id, payload in zip(ids, PAYLOADS, strict=True):
        line = page.locator(f'#board-rows [data-task="{task_id}"]')
        expect(line.locator(".task-link")).to_have_text(f"task {payload}")
        expect(line.locator(".line")).to_contain_text(f"reason {payload}")
        expect(line.locator(".origin-text")).to_have_text(f"ACP · shop: {payload}")
        expect(line.locator(".origin")).to_have_attribute(
            "title", f"Came from an ACP session: shop: {payload}"
        )
    assert page.locator("#board-rows img, #board-rows script").count() == 0
    page.goto(f"/tasks/{ids[1]}")
    expect(page.locator(".task-title")).to_have_text(f"task {PAYLOADS[1]}")
    expect(page.locator(".banner-reason")).to_have_text(f"reason {PAYLOADS[1]}")
    expect(page.locator("#task-origin")).to_have_text(
        f"ACP session — shop: {PAYLOADS[1]} (session sess {PAYLOADS[1]})"
    )
    assert page.locator("main img").count() == 0
