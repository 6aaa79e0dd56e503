"""Safe defaults (issue 12): debug pages mask credentials, sign-ins are throttled per
(name, address) and, higher, per address (issue 32), idle sessions end, every page
carries a Content-Security-Policy without inline script or style and a
Permissions-Policy, and `POST /api/events` asks a signed-in user for the operator role,
not for staff status.

(That `serve` refuses a public address with DEBUG on is in tests/test_deploy.py: it needs
its own process.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client, override_settings
from django.urls import path
from django.utils import timezone

from a2a import services
from a2a.models import ExternalEvent
from dashboard.urls import urlpatterns as dashboard_urlpatterns
from tests.conftest import AGENT
from tests.dashboard.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def settings_with(**env: str) -> dict:
    """Some settings as a fresh process reads them with `env` (settings are read once)."""
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: str(getattr(s, k)) for k in ("
        "'AXES_FAILURE_LIMIT', 'TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT', "
        "'TASKDECK_TRUSTED_PROXIES', 'AXES_COOLOFF_TIME', 'SESSION_COOKIE_AGE', "
        "'SESSION_SAVE_EVERY_REQUEST')}))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TASKDECK_")}
    clean.update(DJANGO_SETTINGS_MODULE="tests.settings", **env)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --- Debug pages mask credentials ------------------------------------------------------------

PG_PASSWORD = "Pg-s3cr3t-pw"
REDIS_PASSWORD = "rEdis-pw-77"
DATABASE_URL = f"postgres://taskdeck:{PG_PASSWORD}@db.internal:5432/taskdeck"
REDIS_URL = f"redis://:{REDIS_PASSWORD}@redis.internal:6379/0"
TOKEN = "td_0badc0de_" + "Q" * 43
MASK = "********************"


def boom(request):
    dsn = DATABASE_URL  # a local holding a URL with credentials
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Other": "fine"}
    where = [{"address": REDIS_URL}]
    raise RuntimeError(f"cannot reach {dsn} ({len(headers)}, {len(where)})")


urlpatterns = [path("boom", boom), *dashboard_urlpatterns]

# Set the way dashboard/settings.py stores them: the URLs as they came, and the Redis URL
# inside CHANNEL_LAYERS (a list of dicts, under "address").
LEAKY = {
    "DEBUG": True,
    "DATABASE_URL": DATABASE_URL,
    "REDIS_URL": REDIS_URL,
    "TASKDECK_TEST_CHANNELS": {
        "default": {"CONFIG": {"hosts": [{"address": REDIS_URL, "socket_connect_timeout": 2}]}}
    },
    "SENTRY_DSN": "https://abc123publickey@o1.ingest.example/7",
    "ROOT_URLCONF": __name__,
}


def assert_no_secret(html: str) -> None:
    for secret in (PG_PASSWORD, REDIS_PASSWORD, TOKEN, "abc123publickey"):
        assert secret not in html, f"{secret} shown on the debug page"


@override_settings(**LEAKY)
def test_the_debug_page_for_an_unknown_host_masks_urls_with_credentials():
    response = Client().get("/", HTTP_HOST="evil.example", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    html = response.content.decode()
    assert response.status_code == 400 and "DisallowedHost" in html  # the debug page
    assert_no_secret(html)
    # still useful: where it points is shown, only the password is hidden
    assert f"postgres://taskdeck:{MASK}@db.internal:5432/taskdeck" in html
    assert f"redis://:{MASK}@redis.internal:6379/0" in html


@override_settings(**LEAKY)
def test_the_debug_page_for_a_view_that_raises_masks_locals_and_the_message():
    response = Client(raise_request_exception=False).get(
        "/boom", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    html = response.content.decode()
    assert response.status_code == 500 and "RuntimeError" in html and "cannot reach" in html
    assert_no_secret(html)
    assert "db.internal" in html and "X-Other" in html


@override_settings(**LEAKY)
def test_the_debug_page_masks_the_session_cookie(operator):
    """A signed-in browser's error page: its COOKIES table and META show no session or
    CSRF value (issue 32: it showed the raw sessionid, and META's CSRF_COOKIE)."""
    client = Client(raise_request_exception=False)
    client.force_login(operator)
    client.cookies["csrftoken"] = "c" * 32
    session_key = client.cookies[settings.SESSION_COOKIE_NAME].value
    html = client.get("/boom").content.decode()
    assert "RuntimeError" in html and 'id="cookie-info"' in html
    assert session_key not in html
    assert "c" * 32 not in html
    shown = re.findall(r"<td>(\w+)</td>\s*<td class=\"code\"><pre>&#x27;(.*?)&#x27;", html)
    assert (settings.SESSION_COOKIE_NAME, MASK) in shown
    assert ("csrftoken", MASK) in shown and ("CSRF_COOKIE", MASK) in shown


def test_the_filter_is_the_default_one_and_masks_by_name_too():
    from django.views.debug import get_default_exception_reporter_filter

    f = get_default_exception_reporter_filter()
    assert type(f).__module__ == "dashboard.security"
    assert f.cleanse_setting("DJANGO_SECRET_KEY", "x") == MASK
    assert f.cleanse_setting("AWS_CREDENTIALS", "x") == MASK
    assert f.cleanse_setting("PRIVATE_KEY_PEM", "x") == MASK
    assert f.cleanse_setting("SENTRY_DSN", "https://k@h/1") == MASK
    assert f.cleanse_setting("HOME_URL", "https://example.com:8443/a@b") == (
        "https://example.com:8443/a@b"  # no credentials, nothing hidden
    )
    assert f.cleanse_setting("X", ["amqp://guest:guest@mq/"]) == [f"amqp://guest:{MASK}@mq/"]


# --- Sign-in throttling (django-axes) -----------------------------------------------------------


def sign_in(client: Client, username: str, password: str, ip: str, url: str = "/login/"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


def assert_locked_out(response) -> None:
    assert response.status_code == 429
    html = response.content.decode()
    assert "Too many failed sign-ins" in html
    assert f"{settings.AXES_COOLOFF_TIME.total_seconds() / 60:g} minutes" in html
    assert "taskdeck.css" in html  # our page, not a bare string


def test_defaults_and_environment_for_throttling_and_idle_sessions():
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT == 50
    assert settings.TASKDECK_TRUSTED_PROXIES == []
    assert settings.SESSION_COOKIE_AGE == 60 * 60 and settings.SESSION_SAVE_EVERY_REQUEST
    assert settings_with(
        TASKDECK_LOGIN_FAILURE_LIMIT="7",
        TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT="70",
        TASKDECK_TRUSTED_PROXIES="10.0.0.2, 192.168.0.0/16,::1",
        TASKDECK_LOGIN_COOLOFF_MINUTES="2.5",
        TASKDECK_SESSION_IDLE_MINUTES="15",
    ) == {
        "AXES_FAILURE_LIMIT": "7",
        "TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT": "70",
        "TASKDECK_TRUSTED_PROXIES": "['10.0.0.2', '192.168.0.0/16', '::1']",
        "AXES_COOLOFF_TIME": "0:02:30",
        "SESSION_COOKIE_AGE": "900",
        "SESSION_SAVE_EVERY_REQUEST": "True",
    }


def test_a_trusted_proxy_that_is_not_an_address_stops_start_up():
    code = "import django; django.setup()"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TASKDECK_")}
    clean.update(DJANGO_SETTINGS_MODULE="tests.settings", TASKDECK_TRUSTED_PROXIES="proxy.lan")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "TASKDECK_TRUSTED_PROXIES" in done.stderr
    assert "proxy.lan: not an address or a CIDR network" in done.stderr


def test_a_name_is_locked_at_its_address_only(operator, viewer):
    """The denial of service of issue 32: five failures for a made-up name from the
    team's address locked everyone there out."""
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        wrong = sign_in(Client(), "ghost", "nope", ip="127.0.0.1")
        assert wrong.status_code == 200 and b"Please enter a correct username" in wrong.content
    assert_locked_out(sign_in(Client(), "ghost", "nope", ip="127.0.0.1"))
    assert_locked_out(sign_in(Client(), "ghost", "nope", ip="127.0.0.1"))  # stays locked
    # the operator (and anyone else) at that address signs in
    assert sign_in(Client(), "ana", "pw-ana", ip="127.0.0.1").status_code == 302
    assert sign_in(Client(), "vic", "pw-vic", ip="127.0.0.1").status_code == 302
    # a real account locked at one address: the right password there does not get in,
    # from another address it does (someone guessing from afar cannot lock its owner out)
    for _ in range(limit):
        sign_in(Client(), "ana", "nope", ip="10.0.0.1")
    assert_locked_out(sign_in(Client(), "ana", "pw-ana", ip="10.0.0.1"))
    assert sign_in(Client(), "ana", "pw-ana", ip="10.0.0.2").status_code == 302


@override_settings(TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT=8)
def test_an_address_spraying_names_is_locked_for_every_name(operator):
    for i in range(7):
        assert sign_in(Client(), f"guess{i}", "nope", ip="10.7.7.7").status_code == 200
    assert_locked_out(sign_in(Client(), "guess-last", "nope", ip="10.7.7.7"))
    assert_locked_out(sign_in(Client(), "ana", "pw-ana", ip="10.7.7.7"))
    assert sign_in(Client(), "ana", "pw-ana", ip="10.7.7.8").status_code == 302


def test_the_admin_login_counts_and_is_locked_too(operator):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        assert sign_in(Client(), "ana", "nope", "10.3.3.3", "/admin/login/").status_code == 200
    assert_locked_out(sign_in(Client(), "ana", "nope", "10.3.3.3", "/admin/login/"))
    assert_locked_out(sign_in(Client(), "ana", "pw-ana", "10.3.3.3"))  # the same count


def test_after_the_cool_off_the_account_signs_in_again(operator):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "ana", "nope", ip="10.4.4.4")
    assert_locked_out(sign_in(Client(), "ana", "pw-ana", ip="10.4.4.4"))
    from axes.models import AccessAttempt

    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    assert sign_in(Client(), "ana", "pw-ana", ip="10.4.4.4").status_code == 302


def forwarded(client: Client, username: str, password: str, peer: str, header: str):
    return client.post(
        "/login/", {"username": username, "password": password},
        REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=header,
    )  # fmt: skip


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(operator):
    """No trusted proxy (the default): a client naming a fresh address in each attempt is
    still counted under its own."""
    for i in range(settings.AXES_FAILURE_LIMIT):
        forwarded(Client(), "ana", "nope", "10.5.5.5", f"203.0.113.{i}")
    assert_locked_out(forwarded(Client(), "ana", "pw-ana", "10.5.5.5", "203.0.113.77"))
    assert forwarded(Client(), "ana", "pw-ana", "10.5.5.6", "10.5.5.5").status_code == 302
    with override_settings(TASKDECK_TRUSTED_PROXIES=["10.9.0.0/16"]):  # another peer's
        assert_locked_out(forwarded(Client(), "ana", "pw-ana", "10.5.5.5", "203.0.113.78"))


@override_settings(TASKDECK_TRUSTED_PROXIES=["10.0.0.2", "172.16.0.0/12"])
def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(operator):
    """Every request comes from the proxy; X-Forwarded-For names the client. Read from the
    right: what the client itself put to the left of its real address is not believed."""
    for i in range(settings.AXES_FAILURE_LIMIT):
        # a client at 198.51.100.9 that forges a first hop; two proxies append
        header = f"203.0.113.{i}, 198.51.100.9, 172.16.4.4"
        forwarded(Client(), "ana", "nope", "10.0.0.2", header)
    assert_locked_out(forwarded(Client(), "ana", "pw-ana", "10.0.0.2", "198.51.100.9"))
    # another client behind the same proxy is not locked out with it
    assert forwarded(Client(), "ana", "pw-ana", "10.0.0.2", "198.51.100.10").status_code == 302
    from axes.models import AccessAttempt

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.9"}
    # a proxy that forwards no usable header: counted under the proxy itself
    assert forwarded(Client(), "ana", "pw-ana", "10.0.0.2", "not-an-ip").status_code == 302


def test_force_login_and_authenticate_without_a_request_are_not_throttled(operator):
    from django.contrib.auth import authenticate

    client = Client()
    client.force_login(operator)
    assert client.get("/").status_code == 200
    assert authenticate(username="ana", password="pw-ana") == operator  # e.g. Client.login
    assert Client().login(username="ana", password="pw-ana")


# --- Idle sessions end ----------------------------------------------------------------------


def test_activity_keeps_a_session_alive_and_idleness_ends_it(op):
    key = op.cookies[settings.SESSION_COOKIE_NAME].value
    idle = timedelta(seconds=settings.SESSION_COOKIE_AGE)

    def expires():
        return Session.objects.get(session_key=key).expire_date

    # almost idle for the whole period: one request renews it
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() + timedelta(minutes=1)
    )
    assert op.get("/").status_code == 200
    assert expires() > timezone.now() + idle - timedelta(minutes=1)
    assert op.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == settings.SESSION_COOKIE_AGE
    # idle for longer than the period: signed out
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    response = op.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# --- Content-Security-Policy and Permissions-Policy ---------------------------------------------


def directives(header: str) -> dict[str, list[str]]:
    out = {}
    for part in header.split(";"):
        if part.strip():
            name, *values = part.split()
            out[name] = values
    return out


def pages(op, make_task) -> list[tuple[Client, str]]:
    task = make_task("working", text="Re-render thumbnails")
    services.report_progress(task.id, 3, 8, actor=AGENT)
    waiting = make_task("input-required")
    anonymous = Client()
    return [
        (op, "/"),
        (op, f"/tasks/{task.id}"),
        (op, f"/tasks/{task.id}?fragment=1"),
        (op, f"/tasks/{waiting.id}"),
        (op, "/inbox"),
        (op, "/demo"),
        (op, "/audit"),
        (anonymous, "/login/"),
        (anonymous, "/admin/login/"),
        (op, "/no-such-page"),
        (anonymous, "/.well-known/agent-card.json"),
    ]


def test_every_page_has_a_strict_csp_and_a_permissions_policy(op, make_task):
    for client, url in pages(op, make_task):
        response = client.get(url)
        assert response.status_code in (200, 404), url
        csp = response["Content-Security-Policy"]
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, url
        d = directives(csp)
        assert d["default-src"] == ["'self'"]
        assert d["script-src"] == ["'self'"] and d["style-src"] == ["'self'"]
        assert d["connect-src"] == ["'self'"]  # fetch, and ws(s) to the same host (CSP 3)
        assert d["img-src"] == ["'self'"]
        assert d["object-src"] == ["'none'"] and d["base-uri"] == ["'none'"]
        assert d["frame-ancestors"] == ["'none'"] and d["form-action"] == ["'self'"]
        policy = response["Permissions-Policy"]
        for feature in ("camera", "microphone", "geolocation", "payment", "usb"):
            assert f"{feature}=()" in policy, (url, feature)


INLINE = [
    (re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"<style\b", re.I), "<style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "style attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "inline event handler"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
]


def test_no_page_or_template_has_inline_script_or_style(op, make_task):
    found = []
    for client, url in pages(op, make_task):
        if url.startswith(("/admin/", "/.well-known/")) or url == "/no-such-page":
            continue  # Django's own admin; JSON
        html = client.get(url).content.decode()
        found += [f"{url}: {what}" for rx, what in INLINE if rx.search(html)]
    for template in sorted((ROOT / "templates").rglob("*.html")):
        text = template.read_text()
        found += [f"{template.relative_to(ROOT)}: {what}" for rx, what in INLINE if rx.search(text)]
    assert not found, found


# --- POST /api/events with a session: the operator role ----------------------------------------


def emit(client: Client, name: str = "deploy.done"):
    return client.post("/api/events", {"name": name}, content_type="application/json")


def test_a_signed_in_operator_who_is_not_staff_may_emit_events(op, operator):
    assert not operator.is_staff
    response = emit(op)
    assert response.status_code == 201, response.content
    assert ExternalEvent.objects.get().sent_by == "operator:ana"


def test_a_viewer_may_not_emit_events_even_as_staff(view_only, viewer, django_user_model):
    refused = emit(view_only)
    assert refused.status_code == 403
    assert set(refused.json()) == {"detail"} and "operator" in refused.json()["detail"]
    staff = make_user(django_user_model, "stan", "viewers")
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    assert emit(client).status_code == 403
    assert not ExternalEvent.objects.exists()


def test_without_a_session_or_key_events_still_ask_for_a_key(transactional_db):
    response = emit(Client())
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
