"""Daphne writes the reason phrase the app gives (a2a/protocol/status_line.py says why).

ASGI's `http.response.start` has no reason phrase, so Daphne always writes the status's
usual one. The protocol handler adds the response's own as the message's `reason` key;
this patch (`install()`, called when dashboard.asgi is imported by a Daphne process) sets
it on Twisted's request after Daphne's start handling: the status line is written with the
first body bytes, so it carries the phrase. Any other ASGI server ignores the key and
writes the usual phrase. Patched: daphne.http_protocol.WebRequest.handle_reply (daphne
4.x), guarded by tests/test_upgrade_guards.py (docs/upgrading.md).
"""

from __future__ import annotations

from http import HTTPStatus

from django.http import HttpResponseBase

_installed = False


def custom(response: HttpResponseBase) -> str | None:
    """The reason phrase the app gave the response (a2a.protocol.status_line.say), None
    for the status's usual one: what the protocol handler passes on as `reason`."""
    try:
        usual = HTTPStatus(response.status_code).phrase
    except ValueError:
        usual = None
    phrase = response.reason_phrase
    return phrase if phrase and phrase != usual else None


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    from daphne.http_protocol import WebRequest

    handle_reply = WebRequest.handle_reply

    def handle_reply_with_reason(self, message) -> None:
        handle_reply(self, message)
        reason = message.get("reason") if message.get("type") == "http.response.start" else None
        if reason:
            self.code_message = reason.encode("ascii", "replace")

    WebRequest.handle_reply = handle_reply_with_reason
