"""Agent- and client-provided text is shown as text on every server-rendered page (the
browser tests check the board, which the browser draws from the WebSocket)."""

from __future__ import annotations

import pytest

from a2a import services
from tests.conftest import AGENT, CLIENT

pytestmark = pytest.mark.django_db(transaction=True)

PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


def assert_inert(html: str) -> None:
    assert "<script>alert(1)</script>" not in html
    assert "<img src=x onerror" not in html
    assert '"><img' not in html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_are_escaped_everywhere(op, make_task, payload):
    task = make_task("working", text=f"task {payload}")
    services.emit_text(task.id, f"agent says {payload}", actor=AGENT)
    services.add_artifact(
        task.id, actor=AGENT, parts=[{"kind": "text", "text": payload}], name=f"a {payload}"
    )
    services.request_input(
        task.id,
        actor=AGENT,
        explanation=f"explain {payload}",
        request={
            "title": f"title {payload}",
            "fields": [
                {"name": "pick", "label": f"label {payload}", "type": "enum", "options": [payload]},
                {"name": "note", "type": "string", "help": f"help {payload}"},
            ],
        },
    )
    paused = make_task("working", text="second")
    services.pause_task(paused.id, actor=CLIENT, reason=f"reason {payload}")
    op.post(f"/tasks/{paused.id}/cancel", {"reason": f"cancel {payload}"})
    pages = [
        f"/tasks/{task.id}",
        f"/tasks/{task.id}?fragment=1",
        f"/tasks/{paused.id}",
        "/inbox",
        "/inbox?fragment=1",
        "/audit",
        f"/demo?guided={task.id}",
    ]
    for url in pages:
        response = op.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode())
    detail = op.get(f"/tasks/{task.id}").content.decode()
    assert "task &lt;script&gt;" in detail or "task &quot;&gt;&lt;img" in detail
    preview = op.post(
        "/bulk", {"action": "pause", "scope": "filter", "q": "task", "reason": payload}
    ).content.decode()
    assert_inert(preview)
