"""The HTTP+JSON binding's routes (A2A 1.0 §11.3, the `google.api.http` options of
`a2a.proto`), plus Taskdeck's pause extension in the same style (`:pause`, `:resume`,
`:awaitResumption`, as `:cancel` is).

Each route names the A2A 1.0 method it calls and how its params are gathered: the JSON
body (POST), the path's ids, and typed query parameters (GET, DELETE; §11.5: camelCase,
numbers as decimal strings, booleans as `true`/`false`). A query value of the wrong type
is refused here with the parameter's name, before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ID = r"(?P<id>[^/]+?)"  # a task id: anything but a slash (ids are opaque strings)
CONFIG = r"(?P<config>[^/]+)"

INT, BOOL, TEXT = "int", "bool", "text"
_INTEGER = re.compile(r"-?[0-9]{1,9}")


@dataclass(frozen=True)
class Route:
    verbs: tuple[str, ...]
    pattern: re.Pattern[str]
    method: str  # the A2A 1.0 method (a2a.protocol.methods.METHODS)
    body: bool = False  # POST routes take their params from the JSON body
    query: dict[str, str] = field(default_factory=dict)  # allowed query params and types
    id_name: str = "id"  # the params key the path's task id goes under

    def params(self, match: re.Match[str]) -> dict[str, Any]:
        """The params the path carries."""
        out: dict[str, Any] = {self.id_name: match["id"]} if "id" in match.groupdict() else {}
        if "config" in match.groupdict():
            out["id"] = match["config"]
        return out


def _route(verbs: str, path: str, method: str, **kw: Any) -> Route:
    return Route(tuple(verbs.split("|")), re.compile(f"^{path}$"), method, **kw)


LIST_QUERY = {
    "contextId": TEXT,
    "status": TEXT,
    "pageSize": INT,
    "pageToken": TEXT,
    "historyLength": INT,
    "statusTimestampAfter": TEXT,
    "includeArtifacts": BOOL,
}
PUSH = "pushNotificationConfigs"

# Most specific first: `tasks/{id}:cancel` must not be read as `tasks/{id}`.
ROUTES: tuple[Route, ...] = (
    _route("POST", r"message:send", "SendMessage", body=True),
    _route("POST", r"message:stream", "SendStreamingMessage", body=True),
    _route("POST", rf"tasks/{ID}:cancel", "CancelTask", body=True),
    # a2a.proto says GET, the specification's text POST: both are served
    _route("GET|POST", rf"tasks/{ID}:subscribe", "SubscribeToTask"),
    _route("POST", rf"tasks/{ID}:pause", "PauseTask", body=True),
    _route("POST", rf"tasks/{ID}:resume", "ResumeTask", body=True),
    _route("POST", rf"tasks/{ID}:awaitResumption", "AwaitTaskResumption", body=True),
    _route(
        "POST",
        rf"tasks/{ID}/{PUSH}",
        "CreateTaskPushNotificationConfig",
        body=True,
        id_name="taskId",
    ),
    _route(
        "GET",
        rf"tasks/{ID}/{PUSH}",
        "ListTaskPushNotificationConfigs",
        query={"pageSize": INT, "pageToken": TEXT},
        id_name="taskId",
    ),
    _route(
        "GET", rf"tasks/{ID}/{PUSH}/{CONFIG}", "GetTaskPushNotificationConfig", id_name="taskId"
    ),
    _route(
        "DELETE",
        rf"tasks/{ID}/{PUSH}/{CONFIG}",
        "DeleteTaskPushNotificationConfig",
        id_name="taskId",
    ),
    _route("GET", rf"tasks/{ID}", "GetTask", query={"historyLength": INT}),
    _route("GET", r"tasks", "ListTasks", query=LIST_QUERY),
    _route("GET", r"extendedAgentCard", "GetExtendedAgentCard"),
)


class NoRoute(Exception):
    """No route has this path (404), or none takes this verb on it (405, `allowed`)."""

    def __init__(self, allowed: tuple[str, ...] = ()) -> None:
        self.allowed = allowed


class BadQuery(Exception):
    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why


def resolve(verb: str, path: str) -> tuple[Route, re.Match[str]]:
    """The route for `verb` on `path` (relative to /a2a/rest/)."""
    allowed: list[str] = []
    for route in ROUTES:
        match = route.pattern.match(path)
        if match is None:
            continue
        if verb in route.verbs or (verb == "HEAD" and "GET" in route.verbs):
            return route, match
        allowed.extend(v for v in route.verbs if v not in allowed)
    raise NoRoute(tuple(allowed))


def query_params(route: Route, query: Any) -> dict[str, Any]:
    """The route's query parameters, typed; unknown ones are ignored (as unknown JSON keys
    are). `query` is a QueryDict: a repeated parameter counts once, its last value."""
    out: dict[str, Any] = {}
    for name, kind in route.query.items():
        if name not in query:
            continue
        raw = query[name]
        if kind == INT:
            if _INTEGER.fullmatch(raw) is None:  # ascii digits: "²".isdigit() is True
                raise BadQuery(name, "must be an integer")
            out[name] = int(raw)
        elif kind == BOOL:
            if raw not in ("true", "false"):
                raise BadQuery(name, "must be true or false")
            out[name] = raw == "true"
        else:
            out[name] = raw
    return out
