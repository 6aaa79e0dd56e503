"""The agent card tells clients what Taskdeck can do and how to authenticate."""

from __future__ import annotations

import pytest

from tests.conftest import local_http

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def http(asgi_server):
    with local_http(base_url=asgi_server, timeout=30) as client:
        yield client


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json"])
def test_card_advertises_pause_and_security(http, asgi_server, path):
    response = http.get(path)
    assert response.status_code == 200
    card = response.json()
    caps = card["capabilities"]
    assert caps["supportsPause"] is True and caps["supportsAwaitResumption"] is True
    assert set(caps["resumeCauses"]) == {
        "explicit_resume",
        "condition_fired",
        "timeout",
        "external_event",
    }
    assert caps["streaming"] is True
    assert caps["pushNotifications"] is True  # a2a.push is installed
    assert any("pause" in ext["uri"] for ext in caps["extensions"])
    assert card["url"] == f"{asgi_server}/a2a/" and card["preferredTransport"] == "JSONRPC"
    assert card["securitySchemes"]["bearer"] == {
        **card["securitySchemes"]["bearer"],
        "type": "http",
        "scheme": "bearer",
    }
    assert card["security"] == [{"bearer": []}]
    skills = {s["id"] for s in card["skills"]}
    assert {"approval", "ci-wait", "scheduled", "batch", "budget"} <= skills


def test_card_is_cacheable_and_revalidates(http):
    first = http.get("/.well-known/agent-card.json")
    assert "max-age" in first.headers["Cache-Control"]
    assert first.headers["Last-Modified"]
    again = http.get(
        "/.well-known/agent-card.json", headers={"If-None-Match": first.headers["ETag"]}
    )
    assert again.status_code == 304 and again.content == b""


def test_card_url_reaches_the_endpoint(http, rpc):
    url = http.get("/.well-known/agent-card.json").json()["url"]
    answer = rpc.raw(
        {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}, path=url
    ).json()
    assert answer["result"]["tasks"] == []


def test_card_refuses_writes(http):
    assert http.post("/.well-known/agent-card.json").status_code == 405
