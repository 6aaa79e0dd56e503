from django.urls import path

from agui.consumers import ViewConsumer

websocket_urlpatterns = [path("ws/agui/", ViewConsumer.as_asgi())]
