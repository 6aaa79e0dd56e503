"""ASGI entry point: HTTP (Django, including SSE streams) and WebSockets (AG-UI view).

WebSockets get the session (AuthMiddlewareStack) and an Origin check against
ALLOWED_HOSTS (a page on another site cannot open a socket with our cookies).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from agui.routing import websocket_urlpatterns  # noqa: E402
from dashboard import body_limit  # noqa: E402

body_limit.install()  # Daphne reads whole bodies before the app runs: limit them as they arrive

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
