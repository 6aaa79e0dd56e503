"""The authenticated extended agent card (0.3 agent/getAuthenticatedExtendedCard, 1.0
GetExtendedAgentCard, HTTP+JSON GET /extendedAgentCard): the card as one API key sees it,
refused without a key (unless anonymous callers are let in); and what the public card says
about it and about the bindings."""

from __future__ import annotations

import httpx
import pytest
from django.test import override_settings

from a2a import api_keys
from a2a.protocol.agent_card import CALLER_EXTENSION_URI, build_card, build_card_10

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}


def caller(card: dict) -> dict:
    (ext,) = [e for e in card["capabilities"]["extensions"] if e["uri"] == CALLER_EXTENSION_URI]
    return ext["params"]


def test_a_read_only_key_sees_its_scopes_and_no_skills_to_start(rpc):
    _, reader = api_keys.create_key("reader", ["read"], owner="acme")
    card = rpc.result("GetExtendedAgentCard", {}, token=reader, headers=V10)
    me = caller(card)
    assert me == {"tenant": "key:acme", "scopes": ["read"], "methods": me["methods"]}
    assert "GetTask" in me["methods"] and "SendMessage" not in me["methods"]
    assert card["skills"] == [] and card["supportedInterfaces"]


def test_a_writing_key_sees_the_skills_it_may_start(rpc):
    card = rpc.result("agent/getAuthenticatedExtendedCard", {})  # 0.3: the 0.3 card
    assert card["protocolVersion"] == "0.3.0" and {s["id"] for s in card["skills"]} >= {"batch"}
    assert "message/send" in caller(card)["methods"]


def test_the_rest_binding_serves_it_too(asgi_server, api_key):
    headers = {"Authorization": f"Bearer {api_key}", **V10}
    card = httpx.get(f"{asgi_server}/a2a/rest/extendedAgentCard", headers=headers).json()
    assert "SendMessage" in caller(card)["methods"]


def test_without_a_key_it_is_refused(rpc, unchanged):
    with unchanged():
        response = rpc.raw(
            {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}},
            token="",
            headers=V10,
        )
    assert response.status_code == 401


def test_where_anonymous_callers_are_let_in_they_get_the_anonymous_card(settings):
    from a2a.auth import authenticate
    from a2a.protocol import calls

    settings.TASKDECK = {**settings.TASKDECK, "ANONYMOUS_SCOPES": ["read"]}
    outcome = calls.decide("GetExtendedAgentCard", {}, authenticate(None), V10)
    me = caller(outcome.value)
    assert me["tenant"] == "anonymous" and me["scopes"] == ["read"]
    assert outcome.value["skills"] == []
    refused = calls.decide("agent/getAuthenticatedExtendedCard", {}, authenticate(None), {})
    assert refused.code == -32007  # 0.3: the *authenticated* card (the 0.3 kit asks this)


def test_the_public_cards_announce_it_and_every_binding(settings):
    assert build_card("https://td.example")["supportsAuthenticatedExtendedCard"] is True
    card = build_card_10("https://td.example")
    assert card["capabilities"]["extendedAgentCard"] is True
    bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
    assert bindings == ["JSONRPC", "HTTP+JSON"]  # no gRPC process configured
    with override_settings(TASKDECK={**settings.TASKDECK, "GRPC_ADDRESS": "td.example:50051"}):
        interfaces = build_card_10("https://td.example")["supportedInterfaces"]
    assert interfaces[-1] == {
        "url": "td.example:50051",
        "protocolBinding": "GRPC",
        "protocolVersion": "1.0",
    }
