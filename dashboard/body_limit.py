"""Request bodies are limited before they are read (issue 12, finding 6).

Daphne (on Twisted) reads a request's whole body into memory or a temporary file before it
calls the application, so no ASGI middleware can refuse a large body early: a 300 MB POST
used to be read completely before its 401, and a chunked body past the limit reached Django
as an HTML 400 with a logged traceback. So the limit is applied where the bytes arrive, in
Daphne's request object (`install()`, called when dashboard.asgi is imported by a Daphne
process):

- a `Content-Length` over TASKDECK MAX_REQUEST_BYTES → 413 at once, nothing read;
- a chunked (or lying) body is counted as it arrives: past the limit → 413, connection closed;
- a body that has not fully arrived BODY_SECONDS after its headers → 408 (a client that
  drips its body, or stops sending, cannot hold a server slot). Twisted's own idle timeout
  (60 s) still bounds a client that never finishes its headers.

The answer is JSON: JSON-RPC's envelope (-32600, id null) on the A2A endpoint, an AIP-193
error under /a2a/rest/ (the HTTP+JSON binding), `{"detail"}` elsewhere. What passes
reaches the application unchanged.

Twisted's own parsing of a POST body as a form is switched off here too
(`_parsePOSTFormSubmission`): Daphne hands the application the raw body and never reads
what Twisted parsed, and for every POST Twisted parsed its Content-Type with the email
package, whose header registry makes a new class each time — the largest share of the
cyclic garbage of an A2A call, walked by full collections of 50-80 ms under load
(docs/production.md, "Garbage and the tail").

It patches daphne.http_protocol.WebRequest (daphne 4.x): Daphne has no body-size option.
tests/test_body_limit.py drives it over raw sockets; behind a proxy, limit there too
(docs/production.md). What it relies on in Daphne and Twisted: docs/upgrading.md.
"""

from __future__ import annotations

import io
import json

from a2a import conf

A2A_PATHS = (b"/a2a", b"/a2a/")
REST_PREFIX = b"/a2a/rest/"
_installed = False


def _limit() -> int:
    return conf.TASKDECK.max_request_bytes


def _seconds() -> float:
    return conf.TASKDECK.body_seconds


def refusal(path: bytes, status: int, reason: str, detail: str) -> bytes:
    """A complete HTTP/1.1 response that closes the connection."""
    bare = path.split(b"?")[0]
    if bare in A2A_PATHS:
        error = {"code": -32600, "message": "Invalid request", "data": {"detail": detail}}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    elif bare.startswith(REST_PREFIX):  # the HTTP+JSON binding's AIP-193 shape
        grpc = "RESOURCE_EXHAUSTED" if status == 413 else "DEADLINE_EXCEEDED"
        info = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "INVALID_REQUEST",
            "domain": "a2a-protocol.org",
            "metadata": {"detail": detail},
        }
        error = {"code": status, "status": grpc, "message": detail, "details": [info]}
        body = json.dumps({"error": error}).encode()
    else:
        body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def install() -> None:
    """Patch Daphne's request so bodies are limited as they arrive (idempotent)."""
    global _installed
    if _installed:
        return
    from daphne.http_protocol import WebRequest
    from twisted.internet import reactor

    got_length, handle_chunk = WebRequest.gotLength, WebRequest.handleContentChunk
    request_received = WebRequest.requestReceived

    def refuse(self, status: int, reason: str, detail: str) -> None:
        if getattr(self, "_td_refused", False):
            return
        self._td_refused = True
        self.content = io.BytesIO()  # whatever else arrives is dropped
        transport = self.channel.transport if self.channel else None
        if transport is not None:
            path = getattr(self.channel, "_path", None) or self.uri or b""  # uri comes later
            transport.write(refusal(path, status, reason, detail))
            transport.loseConnection()

    def limited_got_length(self, length):
        self._td_size, self._td_refused, self._td_done = 0, False, False
        got_length(self, length)
        if length is not None and length > _limit():
            refuse(self, 413, "Payload Too Large", f"request body over {_limit()} bytes")
            return
        self._td_timer = reactor.callLater(_seconds(), late, self)

    def late(self) -> None:
        if not self._td_done:
            refuse(self, 408, "Request Timeout", "the request body did not arrive in time")

    def limited_chunk(self, data):
        if getattr(self, "_td_refused", False):
            return
        self._td_size = getattr(self, "_td_size", 0) + len(data)
        if self._td_size > _limit():
            refuse(self, 413, "Payload Too Large", f"request body over {_limit()} bytes")
            return
        handle_chunk(self, data)

    def limited_received(self, command, path, version):
        self._td_done = True
        timer = getattr(self, "_td_timer", None)
        if timer is not None and timer.active():
            timer.cancel()
        if getattr(self, "_td_refused", False):
            return None
        self._parsePOSTFormSubmission = False  # the module doc says why
        return request_received(self, command, path, version)

    WebRequest.gotLength = limited_got_length
    WebRequest.handleContentChunk = limited_chunk
    WebRequest.requestReceived = limited_received
    _installed = True
