"""The agent card (A2A 0.3 form), served at /.well-known/agent-card.json and the legacy
/.well-known/agent.json, with Cache-Control, ETag and Last-Modified so clients can poll it
cheaply (ConditionalGetMiddleware answers If-None-Match / If-Modified-Since with 304)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils.http import http_date
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from a2a.jsonrpc.dialects import BINDU_EXTENSION_URI, PAUSE_EXTENSION_URI
from a2a.models import Suspension
from a2a.runtime import registry

PROTOCOL_VERSION = "0.3.0"
_STARTED = datetime.now(UTC).replace(microsecond=0)  # the card changes only with a deploy


def base_url(request: HttpRequest) -> str:
    configured = settings.TASKDECK.get("PUBLIC_URL")
    return (configured or request.build_absolute_uri("/")).rstrip("/")


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
        "capabilities": {
            "streaming": False,
            "pushNotifications": False,
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
                    "params": {
                        "states": ["paused-by-client", "paused-by-agent"],
                        "methods": ["tasks/pause", "tasks/await_resumption", "tasks/resume"],
                        "pauseModes": list(Suspension.Mode.values),
                        "onTimeout": ["fail", "resume_with_summary", "resume_with_input"],
                    },
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
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [
            {
                "id": s["id"],
                "name": s["name"],
                "description": s["description"],
                "tags": s.get("tags", []),
                "examples": s.get("examples", []),
            }
            for s in registry.skills()
        ],
    }


@csrf_exempt  # read-only: require_safe answers 405 to anything unsafe
@require_safe
def agent_card(request: HttpRequest) -> JsonResponse:
    card = build_card(base_url(request))
    body = json.dumps(card, sort_keys=True).encode()
    response = JsonResponse(card)
    response["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    response["Last-Modified"] = http_date(_STARTED.timestamp())
    response["Cache-Control"] = "public, max-age=300"
    return response
