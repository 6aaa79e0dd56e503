"""A refusal's words on the HTTP status line (`HTTP/1.1 401 unknown or revoked API key`).

Why: some clients show nothing of a non-2xx answer but its status line. The official
a2a-sdk's JSON-RPC transport raises `HTTP Error 401: Client error '401 <reason>' for url …`
without reading the body (its REST transport reads the AIP-193 body, its gRPC one the
status details), and so does `requests`' raise_for_status. The body and headers stay as
they are; the reason phrase is informative only (RFC 9110 §15: clients may ignore it).

Django keeps a response's reason phrase; ASGI has no field for it, so the protocol handler
passes it as the start message's `reason` (dashboard/protocol_handler.py) and Daphne is
taught to write it (dashboard/reason_phrase.py). HTTP/2 has no reason phrases.
"""

from __future__ import annotations

from django.http import HttpResponseBase

LONGEST = 120


def say(response: HttpResponseBase, text: str) -> HttpResponseBase:
    """`response` with `text` as its reason phrase: visible ASCII only (a status line
    cannot carry a line break), at most LONGEST characters."""
    phrase = "".join(c for c in text if " " <= c <= "~")[:LONGEST].strip()
    if phrase:
        response.reason_phrase = phrase
    return response
