"""Request bodies are limited before they are read (issue 12, finding 6), against the live
server over raw sockets, so the test decides exactly what arrives and when."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)


def exchange(server: str, head: str, body_parts: list[bytes], timeout: float = 15):
    """Send a request head and body parts; return (status, headers, JSON body)."""
    url = urlsplit(server)
    with socket.create_connection((url.hostname, url.port), timeout=timeout) as sock:
        sock.sendall(head.encode())
        try:
            for part in body_parts:
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: what it said is still to be read
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
            if b"\r\n\r\n" in raw:
                head_part, _, rest = raw.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head_part.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if length is not None and len(rest) >= length:
                    break
    head_part, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head_part.split(b" ")[1])
    headers = head_part.decode(errors="replace").lower()
    return status, headers, json.loads(rest) if rest else None


def request(path: str, length: int | None, *, chunked: bool = False) -> str:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Connection: close",
    ]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    elif length is not None:
        lines.append(f"Content-Length: {length}")
    return "\r\n".join(lines) + "\r\n\r\n"


def test_a_declared_300_mb_body_is_refused_before_it_is_read(asgi_server):
    status, headers, body = exchange(asgi_server, request("/a2a/", 300_000_000), [b"{"])
    assert status == 413 and "application/json" in headers
    assert (
        body["error"]["code"] == -32600 and "request body over" in body["error"]["data"]["detail"]
    )


def test_a_chunked_body_past_the_limit_is_refused_as_json(asgi_server):
    limit = settings.TASKDECK["MAX_REQUEST_BYTES"]
    chunk = b"x" * 65536
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (limit // len(chunk) + 2)
    status, headers, body = exchange(asgi_server, request("/a2a/", None, chunked=True), parts)
    assert status == 413 and "application/json" in headers
    assert body["error"]["code"] == -32600


def test_elsewhere_the_refusal_is_a_json_detail(asgi_server):
    status, _, body = exchange(asgi_server, request("/api/events", 5_000_000), [])
    assert status == 413 and "request body over" in body["detail"]


def test_a_body_that_drips_in_is_timed_out(asgi_server):
    """TASKDECK_BODY_SECONDS is 2 in the tests (30 by default): 10 of 100 bytes, then
    nothing — the server answers 408 rather than waiting for the rest."""
    status, _, body = exchange(asgi_server, request("/a2a/", 100), [b'{"jsonrpc":'])
    assert status == 408 and "did not arrive in time" in body["error"]["data"]["detail"]


def test_a_body_within_the_limit_reaches_the_endpoint(asgi_server):
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/list"}).encode()
    status, _, body = exchange(asgi_server, request("/a2a/", len(payload)), [payload])
    assert status == 401 and body["error"]["code"] == -32600  # on to authentication
