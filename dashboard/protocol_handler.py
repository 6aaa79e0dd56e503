"""The A2A endpoints' own Django handler (JSON-RPC and HTTP+JSON), without the dashboard's
middleware.

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

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from asgiref.sync import markcoroutinefunction
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.middleware.security import SecurityMiddleware
from django.urls import set_script_prefix

from dashboard import reason_phrase

# The JSON-RPC endpoint's exact paths and the HTTP+JSON binding's prefix (anything else
# under /a2a/ goes the usual way and 404s there). The agent card stays on the full stack:
# it is fetched once per client, and it relies on ConditionalGetMiddleware for its ETag
# and 304s.
PROTOCOL_PATHS = frozenset({"/a2a", "/a2a/"})
PROTOCOL_PREFIX = "/a2a/rest/"


def is_protocol_path(path: str) -> bool:
    return path in PROTOCOL_PATHS or path.startswith(PROTOCOL_PREFIX)


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
    """Django's ASGI handler with ProtocolSecurity as its only middleware, and with one
    thread hop per call: the view's own.

    Django's handler would add three more: a ThreadSensitiveContext per request (a new
    thread, so that a request's sync code shares one), and the request_started and
    request_finished signals, each sent from a thread (`asend`, `sync_to_async(close)`).
    Their receivers (close_old_connections, reset_queries, close_caches) concern the
    thread they run on, and here that thread holds no connection: the view's database work
    runs on asgiref's shared executor (`database_sync_to_async(thread_sensitive=False)`),
    whose threads keep their connections and check them before and after each call. So
    the signals are sent inline, on the event loop, where they cost microseconds. A hop
    is about 0.1 to 0.2 ms of CPU; GetTask costs about 1 ms in its thread.

    `handle` is Django 5.2's (django/core/handlers/asgi.py) with those two lines changed;
    tests/a2a/test_protocol_handler.py checks the behaviour it must keep (disconnects
    end streams, errors are answered, the signals still fire), and
    tests/test_upgrade_guards.py that what it copies has not changed in Django since
    (docs/upgrading.md)."""

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"the protocol handler serves HTTP only, not {scope['type']!r}")
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            error_response.close()
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):  # the client went away
                await self.send_response(response, send)
            return response

        # As Django: a disconnect cancels the view (a stream's generator ends with it).
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            signals.request_finished.send(sender=self.__class__)
        else:
            response.close()  # sends request_finished
        body_file.close()
        # The cancelled task keeps its CancelledError, whose traceback keeps this frame,
        # whose locals keep the task: a cycle per call, which the cyclic collector alone
        # would free (a2a.fields.unbind says what that cost). Cut here.
        del tasks, task

    async def send_response(self, response, send) -> None:
        """Django's, with the response's own reason phrase, when it has one, as the start
        message's `reason` (a2a/protocol/status_line.py; servers that do not know the key
        ignore it)."""
        reason = reason_phrase.custom(response)
        if reason is None:
            return await super().send_response(response, send)

        async def send_with_reason(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "reason": reason}
            await send(message)

        return await super().send_response(response, send_with_reason)

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        inner = convert_exception_to_response(self._get_response_async)
        self._middleware_chain = convert_exception_to_response(ProtocolSecurity(inner))
