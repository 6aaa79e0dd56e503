"""The A2A JSON-RPC endpoint's own Django handler, without the dashboard's middleware.

Why: those calls are made in loops by other programs, and the dashboard's middleware
costs them more than their own work. Every `MiddlewareMixin` hook runs in a thread
(`sync_to_async(thread_sensitive=True)`), and WhiteNoise, being sync only, turns the
rest of the chain into async→sync→async switches: under load, GetTask spent about half
its time there. None of it applies to a bearer-key JSON-RPC call: no session, no CSRF
(the endpoint is csrf_exempt), no signed-in user, no static files, no HTML to frame or
to give a CSP. What does apply is kept, run inline (it is pure): SecurityMiddleware's
HTTPS redirect and headers, and the ALLOWED_HOSTS check CommonMiddleware would have made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import markcoroutinefunction
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.middleware.security import SecurityMiddleware

# Exact paths (no prefix matching: /a2a/anything else goes the usual way and 404s there).
# The agent card stays on the full stack: it is fetched once per client, and it relies on
# ConditionalGetMiddleware for its ETag and 304s.
PROTOCOL_PATHS = frozenset({"/a2a", "/a2a/"})

Respond = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


class ProtocolSecurity:
    """SecurityMiddleware's request and response hooks, called inline (they read settings
    and headers, nothing else), plus the host check."""

    def __init__(self, get_response: Respond) -> None:
        self.get_response = get_response
        self.security = SecurityMiddleware(get_response)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request.get_host()  # DisallowedHost (400) for a host outside ALLOWED_HOSTS
        redirect = self.security.process_request(request)
        if redirect is not None:
            return redirect
        response = await self.get_response(request)
        if not response.streaming and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))
        return self.security.process_response(request, response)


class ProtocolHandler(ASGIHandler):
    """Django's ASGI handler with ProtocolSecurity as its only middleware, and without a
    ThreadSensitiveContext per request: Django opens one so that a request's sync code
    shares a thread, which costs a new thread per request even when, as here, the only
    sync code is the request_started/finished receivers (close_old_connections on a
    thread that holds no connection). The view's database work runs on asgiref's shared
    executor (`database_sync_to_async(thread_sensitive=False)`), whose threads and
    connections persist."""

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"the protocol handler serves HTTP only, not {scope['type']!r}")
        await self.handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        inner = convert_exception_to_response(self._get_response_async)
        self._middleware_chain = convert_exception_to_response(ProtocolSecurity(inner))
