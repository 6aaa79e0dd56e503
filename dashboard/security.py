"""Safe defaults that settings alone cannot express (docs/production.md, "Security").

- Debug pages and error reports hide credentials: a URL's password
  (`postgres://user:…@host/db`, `redis://:…@host`), Taskdeck API tokens and bearer
  tokens, wherever they appear — settings (also nested, as the Redis URL inside
  CHANNEL_LAYERS), request headers, a frame's local variables, the exception's message —
  besides Django's own rule of hiding whatever a secret-sounding name holds.
- The session and CSRF cookies are hidden by their (configurable) names wherever a name
  goes with a value: the debug page's COOKIES table, a dict in a frame's locals. Django
  hides `csrftoken` (TOKEN) but showed `sessionid` — a signed-in session to whoever sees
  the page (issue 32).

Sign-in throttling is in dashboard/auth_backends.py (it imports django-axes, which needs
the app registry; this module must import even while an error during start-up is shown).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

SUBSTITUTE = SafeExceptionReporterFilter.cleansed_substitute

# scheme://user:password@ — the password is what goes; user and host stay for debugging.
URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^\s/:@'\"<>]*):[^\s/@'\"<>]+@", re.I)
# scheme://token@host (Sentry-style DSNs, tokens in the user part)
URL_USER_TOKEN = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://)[A-Za-z0-9_\-]{16,}@", re.I)
API_TOKEN = re.compile(r"\btd_[0-9a-f]+_[A-Za-z0-9_\-]{16,}")
BEARER = re.compile(r"(?P<head>\bBearer\s+)[^\s'\"<>,;]+", re.I)


def scrub(text: str) -> str:
    """`text` with every credential-looking part replaced by stars."""
    text = URL_PASSWORD.sub(rf"\g<head>:{SUBSTITUTE}@", text)
    text = URL_USER_TOKEN.sub(rf"\g<head>{SUBSTITUTE}@", text)
    text = API_TOKEN.sub(SUBSTITUTE, text)
    return BEARER.sub(rf"\g<head>{SUBSTITUTE}", text)


class SecretsFilter(SafeExceptionReporterFilter):
    """DEFAULT_EXCEPTION_REPORTER_FILTER: Django's name rule (API, AUTH, TOKEN, KEY,
    SECRET, PASS, SIGNATURE, HTTP_COOKIE) plus a few more names, and values that hold
    credentials whatever their name."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|CREDENTIAL|PRIVATE|DSN|SALT",
        flags=re.I,
    )

    def cleanse_setting(self, key, value):
        if isinstance(key, str) and key in (
            settings.SESSION_COOKIE_NAME,
            settings.CSRF_COOKIE_NAME,
            "CSRF_COOKIE",  # request.META: where CsrfViewMiddleware keeps the token
        ):  # the names say nothing secret, their values are credentials
            return SUBSTITUTE
        # type(), not isinstance(): lazy objects pass for str but are not (axes has some)
        if type(value) is str and not (isinstance(key, str) and self.hidden_settings.search(key)):
            return scrub(value)
        return super().cleanse_setting(key, value)

    def get_traceback_frame_variables(self, request, tb_frame):
        # Locals are shown by value: scrub strings and containers (dict keys by name too),
        # leave other objects to their repr (scrubbed by the reporter below).
        return [
            (name, self._local(value))
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]

    def _local(self, value: Any) -> Any:
        if type(value) in (str, dict, list, tuple):  # not subclasses (QueryDict …): as they are
            try:
                return self.cleanse_setting("", value)
            except RecursionError:  # a structure that holds itself
                return value
        return value


class SecretsReporter(ExceptionReporter):
    """DEFAULT_EXCEPTION_REPORTER: the filter's rules, and the same scrubbing for what it
    cannot reach — the exception's message and the printed form of local objects."""

    def get_traceback_data(self):
        data = super().get_traceback_data()
        for key in ("exception_value", "exception_notes"):
            if data.get(key):
                data[key] = scrub(data[key])
        for frame in data.get("frames", []):  # `lastframe` is the last of these
            if "vars" in frame:
                frame["vars"] = [(k, scrub(v)) for k, v in frame["vars"]]
            if frame.get("exc_cause"):
                frame["exc_cause"] = scrub(str(frame["exc_cause"]))
        return data
