"""The agent card, served at /.well-known/agent-card.json and the legacy
/.well-known/agent.json, with Cache-Control, ETag and Last-Modified so clients can poll it
cheaply (ConditionalGetMiddleware answers If-None-Match / If-Modified-Since with 304).

One card for every client (docs/design/a2a-surface.md, D23): without `A2A-Version` (how
0.3 clients, and some 1.0 ones, fetch it) the combined card, the 1.0 card with the 0.3
card's fields added where it has none, as the official a2a-sdk 1.x serves its card
(`agent_card_to_dict`), so both read it; with `A2A-Version: 1.x` the 1.0 card alone, which
1.0 schema checks accept (they refuse the 0.3 fields).

The 1.0 card lists every interface Taskdeck serves: JSON-RPC (/a2a/, preferred), HTTP+JSON
(/a2a/rest) and gRPC (TASKDECK_GRPC_ADDRESS, `host:port`, when a gRPC process serves it).
The 0.3 card lists JSON-RPC only: the other two bindings speak 1.0. The combined card lists
the 1.0 interfaces first, then JSON-RPC once more as protocol version 0.3 (the same URL,
read as 0.3 without the header): a 1.x SDK client picks a 1.0 interface, and the 0.3
fields (`url`, `preferredTransport`, `additionalInterfaces`) name the 0.3 one.

The authenticated extended card (`extended_card`) is the card as one API key sees it: the
skills it may start tasks of, and a caller extension naming its tenant, scopes and the
methods those allow. Without a key it is refused (401), as every call is, unless anonymous
callers are let in (TASKDECK_ANONYMOUS_SCOPES): they get the anonymous tenant's card.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.utils.http import http_date
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from a2a import conf, skills
from a2a.models import Suspension
from a2a.protocol.dialects import BINDU_EXTENSION_URI, PAUSE_EXTENSION_URI

PROTOCOL_VERSION = "0.3.0"
REST_PATH = "/a2a/rest"
CALLER_EXTENSION_URI = "https://taskdeck.dev/extensions/caller/v1"
_STARTED = datetime.now(UTC).replace(microsecond=0)  # the card changes only with a deploy


def base_url(request: HttpRequest) -> str:
    configured = conf.TASKDECK.public_url
    return (configured or request.build_absolute_uri("/")).rstrip("/")


PAUSE_PARAMS = {
    "supportsPause": True,
    "supportsAwaitResumption": True,
    "resumeCauses": list(Suspension.Cause.values),
    "states": ["paused-by-client", "paused-by-agent"],
    "methods": ["tasks/pause", "tasks/await_resumption", "tasks/resume"],
    "methods10": ["PauseTask", "AwaitTaskResumption", "ResumeTask"],
    # the same three on the other 1.0 bindings (docs/protocol.md)
    "httpJsonRoutes": [
        "POST /tasks/{id}:pause",
        "POST /tasks/{id}:awaitResumption",
        "POST /tasks/{id}:resume",
    ],
    "grpcService": "taskdeck.pause.v1.TaskdeckPauseService",
    "pauseModes": list(Suspension.Mode.values),
    "onTimeout": ["fail", "resume_with_summary", "resume_with_input"],
}


def build_card(url: str) -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "name": "Taskdeck",
        "description": "Agent tasks you can pause, park and resume, watched and steered by "
        "operators. Implements the A2A pause RFC (tasks/pause, tasks/await_resumption, "
        "tasks/resume) and Bindu's pause dialect.",
        "url": f"{url}/a2a/",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": f"{url}/a2a/", "transport": "JSONRPC"}],
        "version": "0.1.0",
        "provider": {"organization": "Taskdeck", "url": url},
        "supportsAuthenticatedExtendedCard": True,
        "capabilities": {
            "streaming": True,
            "pushNotifications": True,
            "stateTransitionHistory": True,
            "supportsPause": True,
            "supportsAwaitResumption": True,
            "resumeCauses": list(Suspension.Cause.values),
            "extensions": [
                {
                    "uri": PAUSE_EXTENSION_URI,
                    "description": "First-class paused states (paused-by-client, "
                    "paused-by-agent) with tasks/pause, tasks/await_resumption and "
                    "tasks/resume.",
                    "required": False,
                    "params": PAUSE_PARAMS,
                },
                {
                    "uri": BINDU_EXTENSION_URI,
                    "description": "Bindu's pause/resume dialect: suspended/resumed states, "
                    "metadata.checkpoint, errors -32040/-32041. Activate per request with "
                    "the X-A2A-Extensions header or by sending task_id.",
                    "required": False,
                },
            ],
        },
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "Taskdeck API key (manage.py create_api_key); scopes: "
                "read, write, agent.",
            }
        },
        "security": [{"bearer": []}],
        # what a skill takes when it names nothing else; each skill lists its own
        # (`inputModes`), and a part of another media type is refused with -32005
        "defaultInputModes": list(skills.DEFAULT_INPUT_MODES),
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [
            {
                "id": s["id"],
                "name": s["name"],
                "description": s["description"],
                "tags": s.get("tags", []),
                "examples": s.get("examples", []),
                "inputModes": s["inputModes"],
            }
            for s in skills.catalog()
        ],
    }


def build_card_10(url: str) -> dict[str, Any]:
    """The A2A 1.0 card: `supportedInterfaces`, 1.0 security objects, and nothing the 1.0
    schema rejects (so the pause capabilities live in the extension's params)."""
    card_03 = build_card(url)
    return {
        "name": card_03["name"],
        "description": card_03["description"],
        "version": card_03["version"],
        "provider": card_03["provider"],
        "supportedInterfaces": interfaces_10(url),
        "capabilities": {
            "streaming": card_03["capabilities"]["streaming"],
            "pushNotifications": card_03["capabilities"]["pushNotifications"],
            "extendedAgentCard": True,
            "extensions": [
                {
                    "uri": PAUSE_EXTENSION_URI,
                    "description": card_03["capabilities"]["extensions"][0]["description"],
                    "required": False,
                    "params": PAUSE_PARAMS,
                },
                {
                    "uri": BINDU_EXTENSION_URI,
                    "description": card_03["capabilities"]["extensions"][1]["description"],
                    "required": False,
                },
            ],
        },
        "securitySchemes": {
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": card_03["securitySchemes"]["bearer"]["description"],
                }
            }
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": card_03["defaultInputModes"],
        "defaultOutputModes": card_03["defaultOutputModes"],
        "skills": card_03["skills"],
    }


def interfaces_10(url: str) -> list[dict[str, str]]:
    """Every binding served, the preferred (JSON-RPC) first."""
    out = [
        {"url": f"{url}/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": f"{url}{REST_PATH}", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    grpc = conf.TASKDECK.grpc_address
    if grpc:
        out.append({"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0"})
    return out


def extended_card(url: str, version: str, scopes: frozenset[str], tenant: str, methods):
    """The card as the caller with `scopes` sees it (`methods`: the method names they may
    call). Skills are the ones it may start tasks of: all with `write`, none without."""
    card = build_card_10(url) if version == "1.0" else build_card(url)
    if "write" not in scopes:
        card["skills"] = []
    caller = {
        "uri": CALLER_EXTENSION_URI,
        "description": "Who this card was made for: the API key's tenant, its scopes and "
        "the methods they allow.",
        "required": False,
        "params": {"tenant": tenant, "scopes": sorted(scopes), "methods": sorted(methods)},
    }
    card["capabilities"]["extensions"] = [*card["capabilities"]["extensions"], caller]
    return card


def build_card_combined(url: str) -> dict[str, Any]:
    """The card both versions read: the 1.0 card, the 0.3 JSON-RPC interface added to
    `supportedInterfaces`, then every field of the 0.3 card the 1.0 card lacks (`url`,
    `preferredTransport`, `protocolVersion`, `security`, the 0.3 security scheme's
    `type`…), merged as a2a-sdk's `agent_card_to_dict` merges its compat card: a key
    already there keeps the 1.0 value, objects merge key by key, lists item by item."""
    card = build_card_10(url)
    card["supportedInterfaces"].append(
        {"url": f"{url}/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}
    )
    return _merge(card, build_card(url))


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if key not in into:
            into[key] = value
        elif isinstance(value, dict) and isinstance(into[key], dict):
            _merge(into[key], value)
        elif isinstance(value, list) and isinstance(into[key], list):
            for mine, theirs in zip(into[key], value, strict=False):
                if isinstance(mine, dict) and isinstance(theirs, dict):
                    _merge(mine, theirs)
    return into


def wanted_version(request: HttpRequest) -> str | None:
    """ "1.0" or "0.3" as the A2A-Version header says; None without it."""
    header = (request.headers.get("A2A-Version") or "").strip()
    if header:
        return "1.0" if header.split(".", 1)[0] == "1" else "0.3"
    return None


@csrf_exempt  # read-only: require_safe answers 405 to anything unsafe
@require_safe
def agent_card(request: HttpRequest) -> JsonResponse:
    """The combined card, or the 1.0 card alone for a caller that says it speaks 1.0.
    Without the header the 0.3 reading would be the rule for a call, but a card fetch is
    not a call: 1.0 clients fetch it without the header too (the 1.0 kit does)."""
    url = base_url(request)
    card = build_card_10(url) if wanted_version(request) == "1.0" else build_card_combined(url)
    body = json.dumps(card, sort_keys=True).encode()
    response = JsonResponse(card)
    response["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    response["Last-Modified"] = http_date(_STARTED.timestamp())
    response["Cache-Control"] = "public, max-age=300"
    response["Vary"] = "A2A-Version"
    return response
