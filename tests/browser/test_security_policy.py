"""The Content-Security-Policy and Permissions-Policy headers break nothing: Chromium
reports no violation and no console error on the main pages, whose live parts (the
WebSocket to the same origin, fetched fragments swapped in) keep working; and the sign-in
lockout page under the live server."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.runtime.conftest import wait_state

pytestmark = pytest.mark.django_db(transaction=True)

# Every document in the context reports its violations to the test (the binding survives
# navigations; init scripts run before the page's own and are not subject to its CSP).
LISTENER = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__reportViolation(
    `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ` +
    `${e.sourceFile || location.pathname}:${e.lineNumber} (${e.disposition})`
  );
});
"""


def test_no_page_violates_the_policies(browser, site, operator, start):
    # 60 items of 0.5 s x pace 20 x the tests' delay scale 0.05 = 30 s: still running while
    # the task page is watched however slow the machine (pace 3 once finished in 4.5 s, before
    # the approval below was even asking); the autouse teardown cancels what is left
    batch = start("batch", "Re-render 60 thumbnails", items=60, pace=20)
    wait_state(batch.id, "working")
    approval = start("approval", "Roll out release 2.14 to production")
    wait_state(approval.id, "input-required")

    context = browser.new_context(base_url=site, viewport={"width": 1360, "height": 900})
    problems: list[str] = []
    context.expose_binding("__reportViolation", lambda source, text: problems.append(text))
    context.add_init_script(LISTENER)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def console(msg) -> None:
        where = msg.location.get("url", "")
        if where.endswith("/favicon.ico"):
            return  # Django's admin pages name no icon, so Chromium asks for this one (404)
        if msg.type == "error" or re.search("polic", msg.text, re.I):
            problems.append(f"console {msg.type}: {msg.text} ({where})")

    page.on("console", console)

    page.goto("/login/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "csp-login")
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill("pw-ana")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Tasks")).to_be_visible()
    live = page.locator("#conn")
    expect(live).to_have_attribute("data-status", "live")  # ws: allowed by connect-src 'self'
    expect(page.locator(f'#board-rows [data-task="{batch.id}"]')).to_be_visible()
    shot(page, "csp-board")

    page.goto(f"/tasks/{batch.id}")
    expect(live).to_have_attribute("data-status", "live")
    bar = page.locator("#task-progress progress")
    expect(bar).to_be_visible()
    first = page.locator(".progress-text").text_content()
    # the region is fetched again and swapped in as the batch goes on
    expect(page.locator(".progress-text")).not_to_have_text(first or "", timeout=30_000)
    assert page.evaluate("document.querySelector('#task-progress progress').value") > 0
    width = page.evaluate(
        "getComputedStyle(document.querySelector('#task-progress progress')).width"
    )
    assert float(width.removesuffix("px")) > 200  # styled by the stylesheet, not inline
    shot(page, "csp-task")

    page.goto(f"/tasks/{approval.id}")
    expect(page.locator(".task-title")).to_have_text("Roll out release 2.14 to production")
    page.goto("/inbox")
    expect(page.locator(f'.inbox-item[data-task="{approval.id}"]')).to_be_visible()
    expect(live).to_have_attribute("data-status", "live")
    shot(page, "csp-inbox")
    page.goto("/demo")
    expect(live).to_have_attribute("data-status", "live")
    shot(page, "csp-demo")
    page.goto("/audit")
    expect(page.get_by_role("heading", name=re.compile("Audit"))).to_be_visible()
    shot(page, "csp-audit")

    anonymous = browser.new_context(base_url=site)
    anonymous.expose_binding("__reportViolation", lambda source, text: problems.append(text))
    anonymous.add_init_script(LISTENER)
    admin = anonymous.new_page()
    admin.on("console", console)
    admin.goto("/admin/login/")
    expect(admin.locator("#id_username")).to_be_visible()
    shot(admin, "csp-admin-login")

    page.wait_for_timeout(500)  # late reports
    assert not problems, problems

    # last (the name is then locked at this address until the flush): repeated failures
    # for one name from one address get the lockout page, 429, under Daphne's async
    # middleware stack (Chromium logs the 429 itself as a failed load)
    admin.goto("/login/")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        admin.get_by_label("Username").fill("mallory")
        admin.get_by_label("Password").fill("guess")
        with admin.expect_response(re.compile(r"/login/$")) as answer:
            admin.get_by_role("button", name="Sign in").click()
    assert answer.value.status == 429
    expect(admin.get_by_role("heading", name="Sign-in paused")).to_be_visible()
    expect(admin.get_by_role("alert")).to_contain_text("Too many failed sign-ins")
    assert admin.evaluate("getComputedStyle(document.querySelector('.login-card')).borderRadius")
    shot(admin, "csp-locked-out")
    # the operator (signed in from the same address all along) releases it (issue 32)
    page.goto("/lockouts")
    row = page.locator("tbody tr", has_text="mallory")
    expect(row).to_contain_text("127.0.0.1")
    shot(page, "csp-lockouts")
    row.get_by_label("Reason").fill("the test's own guesses")
    row.get_by_role("button", name="Release").click()
    expect(page.get_by_text("Released sign-ins of 'mallory' from 127.0.0.1")).to_be_visible()
    expect(page.get_by_text("Nothing is locked out.")).to_be_visible()
    assert [p for p in problems if "status of 429" not in p] == []
    anonymous.close()
    context.close()
