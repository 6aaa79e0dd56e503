"""The connection status says when the live view lags (static/js/live.js, app.js): the
server's CUSTOM `taskdeck.lag` events (agui/fanout.py; sent over a real socket in
tests/agui/test_lag_notice.py) turn "Live" into "Live view N s behind" in the same
role=status, aria-live region, and back once the view caught up. The event is handed to
the page's own LiveView.receive, as the socket hands it (a lag of seconds cannot last here:
the suite's scheduler sweeps what is 2 s old)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import live

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.pages]


def lag(page, seconds: float, name: str = "taskdeck.lag") -> None:
    event = {"type": "CUSTOM", "name": name, "value": {"seconds": seconds}}
    page.evaluate("(text) => window.taskdeck.live.receive(text)", json.dumps(event))


def test_the_status_says_how_far_the_live_view_is_behind(open_as, operator):
    page = open_as(operator, "/")
    live(page)
    conn = page.locator("#conn")
    expect(conn).to_have_attribute("role", "status")
    expect(conn).to_have_attribute("aria-live", "polite")
    expect(conn).to_have_text("Live")

    lag(page, 3.4)
    expect(conn).to_have_text("Live view 3 s behind")
    expect(conn).to_have_attribute("data-status", "live")  # still live: only behind
    expect(conn).to_have_attribute("data-lag", "")
    assert "behind" in (conn.get_attribute("title") or "")

    lag(page, 12)
    expect(conn).to_have_text("Live view 12 s behind")
    lag(page, 1, name="someone.else")  # other CUSTOM events are not ours
    expect(conn).to_have_text("Live view 12 s behind")

    lag(page, 0)
    expect(conn).to_have_text("Live")
    expect(conn).not_to_have_attribute("data-lag", "")
    assert page.evaluate("window.taskdeck.live.lagSeconds") == 0
