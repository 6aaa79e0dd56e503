"""Sign-in lockouts (issue 32): a name locked at an address leaves the others there
signing in, over a real server too; the dashboard lists what is locked out and an
operator releases it, audited with who and why; viewers only look."""

from __future__ import annotations

import re

import httpx
import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client, override_settings

from dashboard.models import AuditEntry
from tests.conftest import local_http

pytestmark = pytest.mark.django_db(transaction=True)


def fail(username: str, ip: str, times: int | None = None) -> None:
    for _ in range(times or settings.AXES_FAILURE_LIMIT):
        Client().post("/login/", {"username": username, "password": "nope"}, REMOTE_ADDR=ip)


def sign_in(username: str, password: str, ip: str) -> int:
    return (
        Client()
        .post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)
        .status_code
    )


def test_over_a_real_server_a_made_up_name_does_not_lock_out_the_operator(asgi_server, operator):
    """Daphne on 127.0.0.1: five failures for another name (each naming a fresh address in
    X-Forwarded-For, which no trusted proxy vouches for) lock that name only."""
    with local_http(base_url=asgi_server, timeout=30) as http:

        def post(username: str, password: str, forwarded: str = "") -> httpx.Response:
            http.cookies.clear()
            page = http.get("/login/")
            token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
            headers = {"X-Forwarded-For": forwarded} if forwarded else {}
            return http.post(
                "/login/",
                data={"username": username, "password": password,
                      "csrfmiddlewaretoken": token.group(1).decode()},
                headers=headers,
            )  # fmt: skip

        for i in range(settings.AXES_FAILURE_LIMIT - 1):
            assert post("mallory", "guess", forwarded=f"203.0.113.{i}").status_code == 200
        locked = post("mallory", "guess", forwarded="203.0.113.99")  # the fifth
        assert locked.status_code == 429 and "Sign-in paused" in locked.text
        assert post("mallory", "guess").status_code == 429  # the name stays locked
        signed_in = post("ana", "pw-ana")
        assert signed_in.status_code == 302 and signed_in.headers["location"] == "/"
    assert list(AccessAttempt.objects.values_list("username", "ip_address")) == [
        ("mallory", "127.0.0.1")
    ]


def test_operators_see_and_release_a_locked_name_audited(op, operator):
    fail("ana", "10.1.1.1")
    fail("bob", "10.1.1.2", times=2)  # not locked: not listed
    assert sign_in("ana", "pw-ana", "10.1.1.1") == 429
    page = op.get("/lockouts")
    html = page.content.decode()
    assert page.status_code == 200 and "<code>ana</code>" in html and "10.1.1.1" in html
    assert "bob" not in html and 'name="reason"' in html

    refused = op.post("/lockouts/release", {"username": "ana", "ip_address": "10.1.1.1"})
    assert refused.status_code == 400 and "Give a reason" in refused.content.decode()
    assert sign_in("ana", "pw-ana", "10.1.1.1") == 429  # nothing released

    done = op.post(
        "/lockouts/release",
        {"username": "ana", "ip_address": "10.1.1.1", "reason": "ana forgot caps lock"},
        follow=True,
    )
    assert "Released sign-ins of &#x27;ana&#x27; from 10.1.1.1" in done.content.decode()
    assert "Nothing is locked out." in done.content.decode()
    assert sign_in("ana", "pw-ana", "10.1.1.1") == 302
    entries = list(
        AuditEntry.objects.order_by("at", "id").values("who", "action", "reason", "outcome")
    )
    assert entries == [
        {"who": "operator:ana", "action": "release-sign-in", "reason": "", "outcome": "refused"},
        {"who": "operator:ana", "action": "release-sign-in",
         "reason": "ana forgot caps lock", "outcome": "ok"},
    ]  # fmt: skip
    assert AccessAttempt.objects.filter(username="bob").exists()  # others untouched


@override_settings(TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT=6)
def test_an_address_lockout_is_listed_and_released_for_every_name(op, operator):
    for i in range(6):
        fail(f"guess{i}", "10.2.2.2", times=1)
    assert sign_in("ana", "pw-ana", "10.2.2.2") == 429
    assert "<em>every name</em>" in op.get("/lockouts").content.decode()
    op.post("/lockouts/release", {"username": "", "ip_address": "10.2.2.2", "reason": "office"})
    assert sign_in("ana", "pw-ana", "10.2.2.2") == 302
    assert AuditEntry.objects.get(outcome="ok").detail.startswith(
        "Released sign-ins of every name from 10.2.2.2"
    )


def test_bad_or_empty_releases_change_nothing_and_are_audited(op, operator):
    fail("ana", "10.3.3.3")
    bad = op.post("/lockouts/release", {"username": "ana", "ip_address": "x", "reason": "r"})
    assert bad.status_code == 400 and "Not an IP address." in bad.content.decode()
    nothing = op.post(
        "/lockouts/release", {"username": "zed", "ip_address": "10.3.3.3", "reason": "r"},
        follow=True,
    )  # fmt: skip
    assert "Nothing to release" in nothing.content.decode()
    assert AccessAttempt.objects.filter(username="ana").exists()
    assert list(AuditEntry.objects.values_list("outcome", flat=True)) == ["refused", "refused"]


def test_viewers_see_the_list_but_cannot_release(view_only, viewer):
    fail("ana", "10.4.4.4")
    page = view_only.get("/lockouts").content.decode()
    assert "<code>ana</code>" in page and 'name="reason"' not in page
    forged = view_only.post(
        "/lockouts/release", {"username": "ana", "ip_address": "10.4.4.4", "reason": "me"}
    )
    assert forged.status_code == 403
    assert AccessAttempt.objects.filter(username="ana").exists()
    entry = AuditEntry.objects.get()
    assert (entry.who, entry.action) == ("operator:vic", "release-sign-in")
    assert entry.outcome == "refused"


def test_signed_out_visitors_are_sent_to_sign_in():
    assert Client().get("/lockouts").status_code == 302
    assert Client().post("/lockouts/release", {}).status_code == 302
