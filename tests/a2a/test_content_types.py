"""Content types honoured (issue 32; docs/protocol.md, "Content types"): each skill says
which media types it takes in message parts (`inputModes` on the card); a part of
another media type is refused with ContentTypeNotSupportedError — JSON-RPC -32005, HTTP+JSON
415 in the AIP-193 shape, gRPC INVALID_ARGUMENT (tests/grpc_door/test_grpc_binding.py) —
and nothing is written."""

from __future__ import annotations

import pytest

from a2a import services, skills
from a2a.errors import ContentTypeNotSupported
from a2a.models import Task
from a2a.protocol import agent_card
from tests.conftest import CLIENT, local_http

from .test_rest_binding import error_of

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}
ODD = "application/x-unsupported-tck-type"


@pytest.fixture
def rest(asgi_server, api_key):
    headers = {"Authorization": f"Bearer {api_key}", **V10}
    with local_http(base_url=f"{asgi_server}/a2a/rest", headers=headers, timeout=30) as c:
        yield c


def message_10(*parts: dict, **extra) -> dict:
    return {"messageId": "m-odd", "role": "ROLE_USER", "parts": list(parts), **extra}


def message_03(*parts: dict, **extra) -> dict:
    return {"messageId": "m-odd", "role": "user", "parts": list(parts), **extra}


# A part of a media type no skill here takes, in each way a client can say it.
REFUSED_03 = {
    "0.3 file mimeType": {"kind": "file", "file": {"bytes": "dGNr", "mimeType": ODD}},
    "0.3 file uri": {"kind": "file", "file": {"uri": "https://x.test/a.bin", "mimeType": ODD}},
}
REFUSED_10 = {
    "1.0 raw": {"raw": "dGNr", "mediaType": ODD},  # the kit's CORE-SEND-003
    "1.0 url": {"url": "https://x.test/a.bin", "mediaType": ODD},
    "1.0 text": {"text": "hello", "mediaType": ODD},
    "1.0 data": {"data": {"a": 1}, "mediaType": "image/png"},
}


def _reason(error: dict) -> str:
    return error["data"][0]["reason"]


@pytest.mark.parametrize("part", list(REFUSED_03.values()), ids=list(REFUSED_03))
def test_jsonrpc_0_3_refuses_a_part_the_skill_does_not_take(rpc, unchanged, part):
    with unchanged():
        error = rpc.error(
            "message/send",
            {"message": message_03({"kind": "text", "text": "see file"}, part)},
        )
    assert error["code"] == -32005 and error["message"] == "Incompatible content types"
    assert error["data"]["field"] == "message.parts.1"
    assert error["data"]["mediaType"] == ODD
    assert error["data"]["acceptedModes"] == ["text/plain", "application/json"]


@pytest.mark.parametrize("part", list(REFUSED_10.values()), ids=list(REFUSED_10))
def test_jsonrpc_1_0_refuses_a_part_the_skill_does_not_take(rpc, unchanged, part):
    with unchanged():
        error = rpc.error("SendMessage", {"message": message_10(part)}, headers=V10)
    assert error["code"] == -32005, error
    assert _reason(error) == "CONTENT_TYPE_NOT_SUPPORTED"
    assert "is not accepted; this skill takes text/plain, application/json" in error["message"]


@pytest.mark.parametrize("part", list(REFUSED_10.values()), ids=list(REFUSED_10))
def test_http_json_refuses_a_part_the_skill_does_not_take_with_415(rest, unchanged, part):
    with unchanged():
        response = rest.post("/message:send", json={"message": message_10(part)})
    error = error_of(response, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
    assert error["details"][0]["metadata"]["mediaType"] == part["mediaType"]


def test_a_message_to_an_existing_task_is_judged_by_its_skill_too(rpc, rest, make_task, unchanged):
    task = make_task("working")
    with unchanged():
        error = rpc.error(
            "message/send",
            {"message": message_03(REFUSED_03["0.3 file mimeType"], taskId=task.id)},
        )
        assert error["code"] == -32005
        response = rest.post(
            "/message:send", json={"message": message_10(REFUSED_10["1.0 raw"], taskId=task.id)}
        )
        error_of(response, 415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")


def test_parts_of_accepted_types_go_through(rest):
    """What the skills take, however it is said: a parameter or upper case changes nothing;
    a file that names no media type is not judged."""
    parts = [
        {"text": "plain", "mediaType": "text/plain; charset=utf-8"},
        {"data": {"a": 1}, "mediaType": "Application/JSON"},
        {"raw": "dGNr", "filename": "a.txt", "mediaType": "text/plain"},
        {"raw": "dGNr", "filename": "blob"},
    ]
    body = {"message": message_10(*parts), "configuration": {"returnImmediately": True}}
    response = rest.post("/message:send", json=body)
    assert response.status_code == 200, response.text
    task = Task.objects.get(pk=response.json()["task"]["id"])
    stored = task.messages.get().parts
    assert [p.get("mediaType") or p.get("file", {}).get("mimeType") for p in stored] == [
        "text/plain; charset=utf-8",
        "Application/JSON",
        "text/plain",
        None,
    ]
    got = rest.get(f"/tasks/{task.id}", params={"historyLength": 1}).json()
    assert got["history"][0]["parts"][0]["mediaType"] == "text/plain; charset=utf-8"


def test_the_card_shows_each_skills_input_modes_and_defaults_that_agree(rpc):
    for headers in ({}, V10):
        card = rpc.http.get("/.well-known/agent-card.json", headers=headers).json()
        assert card["defaultInputModes"] == list(skills.DEFAULT_INPUT_MODES)
        assert card["skills"] and all(
            s["inputModes"] == card["defaultInputModes"] for s in card["skills"]
        ), card["skills"]


def test_a_skill_that_declares_its_modes_takes_those(transactional_db, unchanged):
    """A provider's card may name other modes (`type/*` too); the card shows them and the
    services follow them, whichever door calls."""

    def pictures() -> list[dict]:
        card = {"id": "pictures", "name": "Pictures", "description": "d", "tags": []}
        return [{**card, "inputModes": ["image/*"]}]

    skills.register(pictures)
    try:
        card = agent_card.build_card_10("http://testserver")
        assert [s["inputModes"] for s in card["skills"] if s["id"] == "pictures"] == [["image/*"]]
        png = {"kind": "file", "file": {"bytes": "dGNr", "mimeType": "image/png"}}
        first = services.IncomingMessage("m1", [png])
        task = services.create_task(first, actor=CLIENT, skill="pictures")  # a picture is taken
        services.add_message(task.id, services.IncomingMessage("m2", [png]), actor=CLIENT)
        with unchanged(), pytest.raises(ContentTypeNotSupported) as refused:
            services.receive_message(  # and text is not, for this skill
                services.IncomingMessage("m3", [{"kind": "text", "text": "hi"}]),
                actor=CLIENT,
                skill="pictures",
            )
        assert refused.value.field == "message.parts.0"
        assert refused.value.media_type == "text/plain"
        assert refused.value.accepted == ["image/*"]
    finally:
        skills.PROVIDERS.remove(pictures)
