from django.urls import path, re_path

from a2a.acp_door.remote import relay_script
from a2a.events_api import EventsView
from a2a.health import healthz
from a2a.jsonrpc.views import endpoint
from a2a.protocol.agent_card import agent_card
from a2a.rest.views import endpoint as rest_endpoint

urlpatterns = [
    path("a2a", endpoint, name="a2a-jsonrpc-noslash"),
    path("a2a/", endpoint, name="a2a-jsonrpc"),
    # anything under the prefix, the empty rest and newlines included: the binding answers
    # every path there itself (AIP-193 404s), never Django's HTML page
    re_path(r"^a2a/rest/(?P<path>[\s\S]*)\Z", rest_endpoint, name="a2a-rest"),
    path("api/events", EventsView.as_view(), name="events"),
    path("healthz", healthz, name="healthz"),
    path("acp/relay.py", relay_script, name="acp-relay"),
    path(".well-known/agent-card.json", agent_card, name="agent-card"),
    path(".well-known/agent.json", agent_card, name="agent-card-legacy"),
]
