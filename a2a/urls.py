from django.urls import path

from a2a.events_api import EventsView
from a2a.jsonrpc.views import endpoint
from a2a.protocol.agent_card import agent_card

urlpatterns = [
    path("a2a", endpoint, name="a2a-jsonrpc-noslash"),
    path("a2a/", endpoint, name="a2a-jsonrpc"),
    path("api/events", EventsView.as_view(), name="events"),
    path(".well-known/agent-card.json", agent_card, name="agent-card"),
    path(".well-known/agent.json", agent_card, name="agent-card-legacy"),
]
