"""ASGI entry point: HTTP (Django, including SSE streams) and WebSockets (AG-UI view).

The A2A endpoints (POST /a2a, /a2a/rest/…) go to a handler without the
dashboard's middleware (dashboard/protocol_handler.py says why); every other path gets
the full stack.

WebSockets get the session (AuthMiddlewareStack) and an Origin check against
ALLOWED_HOSTS (a page on another site cannot open a socket with our cookies); a socket
whose client stops reading is closed, not buffered for (dashboard/websocket_limits.py).
The remote ACP door's socket (/acp/, a2a/acp_door/remote.py) is routed beside them,
outside the cookie stack: it reads no cookie, only an API key, so there is nothing for
the Origin check to protect (and the editors' relay sends no Origin).
"""

import os

# First: Daphne's asyncio reactor, before anything below imports Twisted (the patches of
# Daphne's protocol classes do), which would install Twisted's default reactor and make
# Daphne replace it with a warning. Daphne's Django app did this when it was installed in
# every process (dashboard/settings.py says why it no longer is).
import daphne.server

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from a2a import collector  # noqa: E402
from a2a.acp_door.remote import SOCKET_PATHS, AcpSocket  # noqa: E402
from agui.routing import websocket_urlpatterns  # noqa: E402
from dashboard import (  # noqa: E402
    body_limit,
    call_threads,
    fair_accept,
    keepalive_limit,
    reason_phrase,
    websocket_limits,
)
from dashboard.protocol_handler import ProtocolHandler, is_protocol_path  # noqa: E402

body_limit.install()  # Daphne reads whole bodies before the app runs: limit them as they arrive
websocket_limits.install()  # Daphne buffers for a socket that does not read: bound it
reason_phrase.install()  # Daphne writes a refusal's words on the status line
fair_accept.install()  # the web processes share a burst of new connections
keepalive_limit.install()  # …and re-share clients that keep their connections open
call_threads.install(daphne.server.twisted_loop)  # the calls' work below the live view's
protocol_app = ProtocolHandler()
acp_socket = AcpSocket()
browser_sockets = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))


async def http_app(scope, receive, send):
    app = protocol_app if is_protocol_path(scope["path"]) else django_asgi_app
    await app(scope, receive, send)


async def websocket_app(scope, receive, send):
    app = acp_socket if scope["path"] in SOCKET_PATHS else browser_sockets
    await app(scope, receive, send)


application = ProtocolTypeRouter({"http": http_app, "websocket": websocket_app})

# What the process keeps for life is out of the collector's reach, and full collections
# are rarer (a2a/collector.py says why).
collector.settle()
