"""Fuzzing the A2A 1.0 HTTP+JSON binding (/a2a/rest/) over real HTTP: every route, its
request built from the JSON-RPC fuzzer's valid 1.0 params (BUILDERS with v10=True) and
then spread over what REST carries them in: the path's ids (tasks in every state, ids no
task has, hostile strings, all URL-encoded), typed query parameters (typed right or
wrong), the JSON body (mutated field by field, sometimes naming another task than the
path, sometimes not JSON or not an object), the verb, the Content-Type, A2A-Version and,
on :subscribe, Last-Event-ID.

The property, for every request: HTTP 200 or 4xx, never 5xx; an error is a JSON body of
exactly the AIP-193 shape, `{"error": {code, status, message, details}}`, whose `code` is
the HTTP status and whose `details` start with a google.rpc.ErrorInfo of the A2A domain
(only a body that is not JSON may have none: a parse error is not an A2A error); a 200
answer to a stream route is SSE whose every `data` is a 1.0 StreamResponse (exactly one
of task / message / statusUpdate / artifactUpdate) and whose `id`s are event ids; a 200
answer to any other route is a JSON object; no traceback in any answer and nothing logged
at ERROR by the server; an error changes nothing in the database; a body naming another
task than its path is never obeyed; a verb no route takes on the path is a 405 with Allow.

The four bugs it found (a 500 on `--5`, a push body's `task_id` beating the path, HTML
404s under the prefix, a non-AIP-193 413) are fixed; a test each at the end keeps them so.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.apps import apps
from django.conf import settings
from hypothesis import given
from hypothesis import strategies as st

from a2a.rest import routes as rest_routes
from tests.fuzz import support
from tests.fuzz.conftest import STATES
from tests.fuzz.support import Ref, encode, fuzz_settings, strings
from tests.fuzz.test_jsonrpc_fuzz import BINDU, BUILDERS, CONTENT_TYPES, Target, snake_keys

# No module-wide django_db mark: the tests that talk to the server get a transactional
# database through the `keys` and `world` fixtures, and the others need none (each flush
# of the database costs a PostgreSQL run a few tenths of a second).
pytestmark = [support.TIMEOUT]

PREFIX = "/a2a/rest/"
SURFACE = "a2a-rest"
VERBS = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]
STREAM_KEYS = {"task", "message", "statusUpdate", "artifactUpdate"}
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
# google.rpc.Code names (OK excluded: an error is never OK; INTERNAL is a 500's)
GRPC_CODES = {
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
}
# the statuses whose gRPC name is not a matter of A2A 1.0 §5.4's choices
GRPC_FOR_HTTP = {
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}


# --- the routes ----------------------------------------------------------------------------

# Each route's path, by the 1.0 method it calls: {id} is the task, {config} a push config.
TEMPLATES = {
    "SendMessage": "message:send",
    "SendStreamingMessage": "message:stream",
    "CancelTask": "tasks/{id}:cancel",
    "SubscribeToTask": "tasks/{id}:subscribe",
    "PauseTask": "tasks/{id}:pause",
    "ResumeTask": "tasks/{id}:resume",
    "AwaitTaskResumption": "tasks/{id}:awaitResumption",
    "CreateTaskPushNotificationConfig": "tasks/{id}/pushNotificationConfigs",
    "ListTaskPushNotificationConfigs": "tasks/{id}/pushNotificationConfigs",
    "GetTaskPushNotificationConfig": "tasks/{id}/pushNotificationConfigs/{config}",
    "DeleteTaskPushNotificationConfig": "tasks/{id}/pushNotificationConfigs/{config}",
    "GetTask": "tasks/{id}",
    "ListTasks": "tasks",
    "GetExtendedAgentCard": "extendedAgentCard",
}
STREAMING = {"SendStreamingMessage", "SubscribeToTask"}
STREAM_WAIT = {"SendStreamingMessage": 1.5, "SubscribeToTask": 0.5}
TASK_ID_KEYS = ("id", "taskId", "task_id")


@dataclass(frozen=True)
class Spec:
    """One route as the fuzzer sees it: the route table's entry plus its path template."""

    route: rest_routes.Route
    template: str

    @property
    def method(self) -> str:
        return self.route.method

    @property
    def push(self) -> bool:
        """Push config routes name their task `taskId` (their own `id` is the config's)."""
        return self.route.id_name == "taskId"

    @property
    def body_task_keys(self) -> tuple[str, ...]:
        """The body keys that name a task (on a route whose path names one)."""
        if self.push:
            return ("taskId", "task_id")
        return TASK_ID_KEYS


SPECS = [Spec(route, TEMPLATES[route.method]) for route in rest_routes.ROUTES]


def takes(spec: Spec, verb: str) -> bool:
    """Whether the route serves `verb` (HEAD wherever GET is)."""
    verbs = spec.route.verbs
    return verb in verbs or (verb == "HEAD" and "GET" in verbs)


def reached_by(spec: Spec, verb: str) -> Spec:
    """The route `verb` reaches on `spec`'s path: two routes share some paths (a push
    config list takes GET, its creation POST), and a request another route on the path
    takes is a request to that route."""
    if takes(spec, verb):
        return spec
    return next((s for s in SPECS if s.template == spec.template and takes(s, verb)), spec)


# --- building one request ------------------------------------------------------------------

# Path ids no client should send, URL-encoded like any other: empty, dot segments, a slash,
# another route's suffix, NUL, a lone surrogate, too long, URL syntax.
NASTY_IDS = [
    "",
    ".",
    "..",
    "a/b",
    "x:cancel",
    ":",
    "a b",
    "\x00",
    "a\x00b",
    "\ud800",
    "é",
    "a" * 129,
    "a" * 3000,
    "?x=1",
    "#frag",
    "%41",
    "%",
    "pushNotificationConfigs",
    "\r\nX-Injected: 1",
]
# Query values of the wrong type (or right on the edge) for an integer / boolean parameter.
BAD_INTS = [
    "ten",
    "",
    "-",
    "--5",
    "+5",
    "1.5",
    "1e3",
    "0x10",
    " 5",
    "5 ",
    "٣",
    "²",
    "1_000",
    "99999999999",
    "-9999999999",
    "9999999999",
    "-1",
    "0",
    "101",
    "true",
    "null",
    "\x00",
]
BAD_BOOLS = ["yes", "True", "TRUE", "1", "0", "", "false ", "null", "\x00"]
# Last-Event-ID on :subscribe: event ids (past the end too) and garbage.
LAST_EVENT_IDS = ["0", "1", "abc", "-1", "99999999999999999999999999", "٣".encode(), "5\t5", ""]
PATH_EDITS = [
    "trailing-slash",
    "double-slash",
    "upper",
    "unknown-action",
    "extra-segment",
    "just-tasks-slash",
    "root",
]


def encode_segment(value: str) -> str:
    """A path segment, percent-encoded (a lone surrogate as its UTF-8-ish bytes); a
    segment of dots only is encoded too, or the client would resolve it away."""
    text = quote(value, safe="", errors="surrogatepass")
    return text.replace(".", "%2E") if text and set(text) == {"."} else text


def plain(value: Any) -> bool:
    """An id that addresses its route unambiguously (no slash, colon or dot segment)."""
    return isinstance(value, str) and bool(re.fullmatch(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*", value))


@dataclass
class Request:
    """One REST request as drawn, kept apart (ids, query, body) rather than as a URL and
    bytes: the checks need to know what the path named and what the body said."""

    spec: Spec
    verb: str
    ids: dict[str, Any]  # "id" / "config" → the decoded path id (Refs until resolved)
    query: list[tuple[str, Any]]
    body: Any  # a JSON value (with Raw fragments), or bytes sent as they are, or None
    headers: dict[str, Any]
    path_edit: str | None
    notes: list[str]

    def resolved(self, world) -> Request:
        """The request with its Refs looked up (one lookup per distinct Ref)."""
        got = world.resolve({"ids": self.ids, "query": self.query, "body": self.body})
        return Request(
            self.spec,
            self.verb,
            got["ids"],
            got["query"],
            got["body"],
            self.headers,
            self.path_edit,
            self.notes,
        )

    def url(self) -> str:
        path = self.spec.template
        for key, value in self.ids.items():
            path = path.replace("{" + key + "}", encode_segment(str(value)))
        path = _edit_path(path, self.path_edit)
        if self.query:
            pairs = [(k, v if isinstance(v, str) else str(v)) for k, v in self.query]
            path += "?" + urlencode(pairs, errors="surrogatepass")
        return PREFIX + path

    def content(self) -> bytes:
        if self.body is None:
            return b""
        return self.body if isinstance(self.body, bytes) else encode(self.body)

    @property
    def wrong_verb(self) -> bool:
        return not takes(self.spec, self.verb)

    @property
    def must_be_405(self) -> bool:
        """A verb the route does not take, on a path no other route takes it on. Not GET
        on `tasks/{id}:cancel` and the like: ids are opaque and may hold a colon, so the
        GetTask route reads `X:cancel` as a task id (a 404 when no task has it)."""
        other_route = self.verb in ("GET", "HEAD") and self.spec.template.startswith("tasks/{id}:")
        return self.addressed and self.wrong_verb and not other_route

    @property
    def addressed(self) -> bool:
        """The request reaches the route it was built for (ids plain, path not edited)."""
        return self.path_edit is None and all(plain(v) for v in self.ids.values())

    def contradicting_keys(self) -> list[str]:
        """The body's task-naming keys whose value is another task than the path's."""
        if not (self.spec.route.body and "id" in self.ids and isinstance(self.body, dict)):
            return []
        return [
            k
            for k in self.spec.body_task_keys
            if isinstance(self.body.get(k), str) and self.body[k] != self.ids["id"]
        ]

    def describe(self) -> str:
        body = self.content()
        return (
            f"{self.verb} {self.url()[:700]}\nheaders: {self.headers}\n"
            f"body: {body[:600]!r}{' …' if len(body) > 600 else ''}"
        )


def _edit_path(path: str, edit: str | None) -> str:
    """A path a client gets wrong: not a route (404), or one taking other verbs (405)."""
    if edit == "trailing-slash":
        return path + "/"
    if edit == "double-slash":
        return "/" + path
    if edit == "upper":
        return path[:1].upper() + path[1:]
    if edit == "unknown-action":
        return path.split(":")[0] + ":nope"
    if edit == "extra-segment":
        return path + "/x"
    if edit == "just-tasks-slash":
        return "tasks/"
    if edit == "root":
        return ""
    return path


def _split(spec: Spec, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The builder's params as (path ids, the rest): the task id under whichever name the
    builder chose, a push config's own id."""
    params = dict(params)
    ids: dict[str, Any] = {}
    if "{id}" in spec.template:
        keys = ("taskId",) if spec.push else TASK_ID_KEYS
        found = next((k for k in keys if k in params), None)
        ids["id"] = params.pop(found) if found else Ref("task", "working")
    if "{config}" in spec.template:
        ids["config"] = params.pop("id", "cfg-1")
    return ids, params


def _typed(value: Any) -> Any:
    """A query value as §11.5 writes it: booleans `true`/`false`, numbers in decimal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


# an integer behind odd signs: what a lax sign check lets through to int()
signed_ints = st.builds(
    str.__add__,
    st.sampled_from(["-", "--", "+", "-+", "+-", "---", " -"]),
    st.integers(0, 99).map(str),
)


def _bad_query_value(draw, kind: str | None) -> str:
    if kind == rest_routes.INT:
        value = draw(
            st.one_of(st.sampled_from(BAD_INTS), signed_ints, st.integers().map(str), strings)
        )
        return value
    if kind == rest_routes.BOOL:
        return draw(st.one_of(st.sampled_from(BAD_BOOLS), strings))
    return draw(strings)


def mutate_query(draw, spec: Spec, query: list[tuple[str, Any]]) -> list[str]:
    """1 to 3 edits of `query` in place: a value of the wrong type, a parameter dropped,
    repeated (the last value counts), unknown, or misspelt."""
    notes: list[str] = []
    names = list(spec.route.query) or ["pageSize"]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["retype", "retype", "drop", "repeat", "unknown", "misspell"]))
        if op == "drop" and query:
            i = draw(st.integers(0, len(query) - 1))
            notes.append(f"drop {query.pop(i)[0]}")
        elif op == "repeat" and query:
            name = query[draw(st.integers(0, len(query) - 1))][0]
            query.append((name, _bad_query_value(draw, spec.route.query.get(name))))
            notes.append(f"repeat {name}")
        elif op == "unknown":
            name = draw(st.one_of(st.sampled_from(support.FIELD_NAMES), support.short_text))
            query.append((name, draw(strings)))
            notes.append(f"unknown {name!r}")
        elif op == "misspell":
            name = draw(st.sampled_from(names))
            odd = draw(st.sampled_from([name.upper(), re.sub("([A-Z])", r"_\1", name).lower()]))
            query.append((odd, draw(strings)))
            notes.append(f"misspell {odd}")
        else:
            name = draw(st.sampled_from(names))
            value = _bad_query_value(draw, spec.route.query.get(name))
            query[:] = [(k, v) for k, v in query if k != name] + [(name, value)]
            notes.append(f"retype {name}")
    return notes


def rest_headers(draw, keys, spec: Spec, has_body: bool, clean: bool = False) -> dict[str, Any]:
    """Mostly what a client sends (the full key, JSON, A2A-Version 1.0 or none); now and
    then (never when `clean`) a wrong key, content type or version, a Bindu extension, a
    Last-Event-ID."""
    headers: dict[str, Any] = {}
    auth = "full"
    if not clean and support.chance(draw, 8):
        auth = draw(st.sampled_from(["read", "none", "basic", "garbage", "long"]))
    token = {
        "full": f"Bearer {keys.full}",
        "read": f"Bearer {keys.read_only}",
        "basic": "Basic dXNlcjpwYXNz",
        "garbage": "Bearer td_nope_nope",
        "long": "Bearer " + "x" * 300,
    }.get(auth)
    if token:
        headers["Authorization"] = token
    if has_body or support.chance(draw, 8):
        ctype = "application/json"
        if not clean and support.chance(draw, 4):
            ctype = draw(st.sampled_from(CONTENT_TYPES))
        if ctype is not None:
            headers["Content-Type"] = ctype
    version = draw(st.sampled_from([None, "1.0"]))
    if not clean and support.chance(draw, 8):
        version = draw(st.sampled_from(["0.3", "2.0", "1", "1.1", "", "x", "1.0, 0.3"]))
    if version is not None:
        headers["A2A-Version"] = version
    if not clean and support.chance(draw, 8):
        name = draw(st.sampled_from(["A2A-Extensions", "X-A2A-Extensions"]))
        headers[name] = draw(
            st.sampled_from([BINDU, f"https://example.com/ext, {BINDU}", ",,,", "x" * 500])
        )
    one_in = 4 if spec.method == "SubscribeToTask" else 32
    if not clean and support.chance(draw, one_in):
        headers["Last-Event-ID"] = draw(st.sampled_from(LAST_EVENT_IDS))
    return headers


# a task other than the path's: one in some state, or one no task has
other_tasks = st.builds(Ref, st.just("task"), st.sampled_from([*STATES, "missing"]))


def _name_another_task(
    draw,
    spec: Spec,
    ids: dict[str, Any],
    body: dict,
    notes: list[str],
    spelling: tuple[str, ...] = (),
) -> None:
    """The body's task keys in `spelling` (else some of them) set to another task, one in
    four to the path's own (which is no contradiction)."""
    keys = spelling or [k for k in spec.body_task_keys if draw(st.booleans())]
    for key in keys or [draw(st.sampled_from(spec.body_task_keys))]:
        if support.chance(draw, 4):
            body[key] = ids["id"]
        else:
            body[key] = draw(other_tasks if draw(st.booleans()) else strings)
        notes.append(f"body names a task under {key!r}")


def build_request(
    draw, keys, specs: list[Spec] = SPECS, focus: str = "", spelling: tuple[str, ...] = ()
) -> Request:
    """A request to one of `specs`, valid or broken anywhere (path ids, verb, body or
    query, path, headers). `focus` spends it on one thing instead: "contradiction" (a
    body naming another task than the path, the request valid otherwise), "query"
    (the query parameters, always edited); `spelling` names the body's task keys a
    contradiction uses. Without a focus, one request in four is
    "clean" (only the builders' own hostile values): mutations mostly end at an early
    refusal, and every route must be reached on both sides, results as well as errors."""
    spec = draw(st.sampled_from(specs), label="route")
    if not focus and support.chance(draw, 4):
        focus = "clean"
    wild = not focus  # anything may be broken
    params = BUILDERS[spec.method](draw, True)
    ids, rest = _split(spec, params)
    if focus == "contradiction" and spec.push:
        # the builder's webhook addresses are mostly refused (ftp, loopback, port 99999):
        # a contradiction must land on a body that is valid otherwise
        rest["url"] = "https://hooks.example.com/taskdeck"
        rest.pop("token", None)
    notes: list[str] = [focus] if focus else []
    if "id" in ids and wild and support.chance(draw, 8):
        ids["id"] = draw(st.one_of(st.sampled_from(NASTY_IDS), strings))
        notes.append("nasty task id")
    if "config" in ids and wild and support.chance(draw, 8):
        ids["config"] = draw(st.one_of(st.sampled_from(NASTY_IDS), strings))
        notes.append("nasty config id")

    verb = draw(st.sampled_from(spec.route.verbs))
    if wild and support.chance(draw, 8):
        verb = draw(st.sampled_from(VERBS))
        notes.append(f"verb {verb}")
        if (other := reached_by(spec, verb)) is not spec:
            spec = other
            notes.append(f"which reaches {other.method}")

    query: list[tuple[str, Any]] = []
    body: Any = None
    if spec.route.body:
        body = snake_keys(rest) if support.chance(draw, 4) else rest
        contradict = "id" in ids and (
            focus == "contradiction" or (wild and support.chance(draw, 8))
        )
        # 1 to 3 fields broken: in three bodies of four; in one of four when the body
        # contradicts the path (obeying it is a 200 only on a body valid otherwise), and
        # never when the contradiction is what the request is about
        if focus in ("clean", "contradiction"):
            broken = False
        else:
            broken = support.chance(draw, 4) if contradict else not support.chance(draw, 4)
        if broken:
            body, more = support.mutate(draw, body, max_mutations=3)
            notes += more
        if isinstance(body, dict) and contradict:
            _name_another_task(draw, spec, ids, body, notes, spelling)
        if body == {} and draw(st.booleans()):
            body = None  # no body at all
    else:
        query = [(k, _typed(v)) for k, v in rest.items()]
        if spec.method == "ListTasks" and draw(st.booleans()):
            query.append(("includeArtifacts", _typed(draw(st.booleans()))))
        if spec.method == "ListTaskPushNotificationConfigs" and draw(st.booleans()):
            query.append(("pageSize", _typed(draw(st.integers(0, 100)))))
        edit = focus == "query" or (wild and support.chance(draw, 2))
        if edit and (query or spec.route.query):
            notes += mutate_query(draw, spec, query)
        if verb in ("POST", "PUT", "PATCH") and wild and draw(st.booleans()):
            # a body where the route reads none (POST :subscribe): ignored, never obeyed
            body = draw(st.one_of(st.just({"id": Ref("task", "working")}), support.json_values))

    path_edit = None
    if wild and support.chance(draw, 16):
        path_edit = draw(st.sampled_from(PATH_EDITS))
        notes.append(f"path {path_edit}")
    clean = focus in ("clean", "contradiction")
    headers = rest_headers(draw, keys, spec, body is not None, clean=clean)
    return Request(spec, verb, ids, query, body, headers, path_edit, notes)


# --- the property --------------------------------------------------------------------------


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("out of range")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def may_be_unparsable(body: bytes) -> bool:
    """Whether the server may read `body` as no JSON at all (a parse error, which carries
    no ErrorInfo): not strict JSON (NaN, 1e400, 5000 digits, bad UTF-8), or nested so deep
    that a parser on another thread's stack could run out of recursion."""
    if not body:
        return False
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        return True
    return _depth(value) > 400


def check_error_body(body: Any, answer: support.Exchange, request: Request) -> None:
    """AIP-193, exactly: `{"error": {code, status, message, details}}`."""
    assert isinstance(body, dict) and set(body) == {"error"}, f"not an AIP-193 body: {body!r:.300}"
    error = body["error"]
    assert isinstance(error, dict), body
    assert set(error) == {"code", "status", "message", "details"}, f"keys {sorted(error)}"
    code = error["code"]
    assert isinstance(code, int) and not isinstance(code, bool), f"code {code!r}"
    assert code == answer.status, f"error.code {code} under HTTP {answer.status}"
    assert error["status"] in GRPC_CODES, f"status {error['status']!r} is no gRPC code name"
    expected = GRPC_FOR_HTTP.get(answer.status)
    assert expected is None or error["status"] == expected, (
        f"HTTP {answer.status} named {error['status']}, not {expected}"
    )
    assert isinstance(error["message"], str) and error["message"], "no message"
    details = error["details"]
    assert isinstance(details, list), f"details {details!r:.200}"
    parse_error = request.spec.route.body and may_be_unparsable(request.content())
    if not details:
        assert parse_error and answer.status == 400, "an A2A error without an ErrorInfo"
        return
    info = details[0]
    assert isinstance(info, dict) and info.get("@type") == ERROR_INFO, f"details[0] {info!r:.300}"
    assert set(info) == {"@type", "reason", "domain", "metadata"}, f"ErrorInfo keys {sorted(info)}"
    assert info["domain"] == "a2a-protocol.org", f"domain {info['domain']!r}"
    assert isinstance(info["reason"], str) and re.fullmatch(r"[A-Z][A-Z0-9_]*", info["reason"])
    metadata = info["metadata"]
    assert isinstance(metadata, dict), f"metadata {metadata!r:.200}"
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()), (
        f"ErrorInfo.metadata must map strings to strings: {metadata!r:.300}"
    )
    assert len(details) <= 2, f"{len(details)} details"
    if len(details) == 2:
        bad = details[1]
        assert isinstance(bad, dict) and bad.get("@type") == BAD_REQUEST, f"{bad!r:.300}"
        assert set(bad) == {"@type", "fieldViolations"}, f"BadRequest keys {sorted(bad)}"
        assert info["reason"] == "INVALID_PARAMS", "a BadRequest for another reason"
        violations = bad["fieldViolations"]
        assert isinstance(violations, list) and violations, "no field violations"
        for v in violations:
            assert isinstance(v, dict) and set(v) == {"field", "description"}, f"{v!r:.200}"
            assert isinstance(v["field"], str) and isinstance(v["description"], str), v


def check_stream(answer: support.Exchange) -> None:
    """SSE of 1.0 StreamResponses: each `data` one object with exactly one payload key,
    each `id` an event id."""
    assert answer.frames, f"a stream without data: {answer.describe()}"
    for frame in answer.frames:
        item = support.strict_loads(frame)
        assert isinstance(item, dict), f"a frame that is not an object: {frame[:300]}"
        assert len(item) == 1 and set(item) <= STREAM_KEYS, f"not a StreamResponse: {frame[:300]}"
        assert isinstance(next(iter(item.values())), dict), frame[:300]
    for line in re.split(r"\r\n|\r|\n", answer.text):
        if line.startswith("id:"):
            assert re.fullmatch(r"id: ?\d+", line), f"an SSE id that is no event id: {line!r}"


def check_answer(answer: support.Exchange, request: Request) -> bool:
    """Asserts the property; returns True when the answer is an error."""
    assert answer.status == 0 or answer.status < 500, answer.describe()
    if support.refused_by_http_layer(answer, request.headers):
        return True
    assert answer.status in (0, 200) or 400 <= answer.status < 500, answer.describe()
    support.assert_no_traceback(answer.text)
    stream_route = request.spec.method in STREAMING
    if request.must_be_405:
        assert answer.status in (401, 405), f"{request.verb} on this route: {answer.describe()}"
    if answer.status == 405:
        allow = [v.strip() for v in answer.headers.get("Allow", "").split(",") if v.strip()]
        assert allow and request.verb not in allow, f"405 with Allow {allow}"
    if answer.status == 401:
        assert answer.headers.get("WWW-Authenticate", "").startswith("Bearer"), answer.describe()
    if answer.status == 200 and request.contradicting_keys():
        raise AssertionError(
            f"the body names another task ({request.contradicting_keys()}) than the path, "
            f"and the server obeyed: {answer.describe()}"
        )
    if request.verb == "HEAD":  # no body to look at
        return answer.status != 200
    if answer.stream:
        if answer.timed_out and not answer.frames:
            # a subscription with nothing to say yet: only a stream route does that
            assert stream_route and not request.wrong_verb, f"went quiet: {answer.describe()}"
            return False
        assert answer.status == 200, answer.describe()
        assert stream_route or not request.addressed, f"a stream from {request.spec.method}"
        check_stream(answer)
        return False
    assert answer.content_type.startswith("application/json"), answer.describe()
    body = support.strict_loads(answer.text)
    if answer.status == 200:
        assert isinstance(body, dict), f"a result that is not an object: {answer.describe()}"
        if request.addressed and not request.wrong_verb:
            assert not stream_route, f"{request.spec.method} answered without a stream"
        return False
    check_error_body(body, answer, request)
    return True


def send_and_check(server, http, guard, world, request: Request) -> support.Exchange | None:
    """One request: resolve its Refs, send it, check the answer, the server's log and
    (for an error) that the database is unchanged."""
    request = request.resolved(world)
    before = guard.before(len(world.made))
    # how long a stream may stay quiet: a send's stream starts with its task at once; a
    # subscription may rightly say nothing (a cursor past its events, a HEAD)
    stream_wait = STREAM_WAIT.get(request.spec.method)
    answer = support.exchange(
        http,
        SURFACE,
        request.url(),
        request.content(),
        request.headers,
        stream_wait=stream_wait,
        verb=request.verb,
    )
    context = f"{request.spec.method} {request.notes}\n{request.describe()}\n"
    context += f"answer: {answer.describe()}"
    errors = server.new_errors()
    if errors:
        support.fail(f"the server logged an error:\n{support.log_summary(errors)}\n{context}")
    try:
        is_error = check_answer(answer, request)
    except AssertionError as exc:
        guard.forget()
        support.fail(f"{exc}\n{context}")
        return answer
    support.tally(SURFACE, "errors" if is_error else "results")
    if not is_error:
        guard.forget()
    elif changes := guard.changed_since(before):
        support.fail(f"an error answer changed the database: {changes}\n{context}")
    return answer


# --- the tests -----------------------------------------------------------------------------


def test_every_route_is_covered():
    """Each route of the table has a template here that the table resolves back to it
    (a new route must get one), and a params builder."""
    assert {s.method for s in SPECS} == {r.method for r in rest_routes.ROUTES}
    for spec in SPECS:
        assert spec.method in BUILDERS, spec.method
        path = spec.template.replace("{id}", "t-1").replace("{config}", "c-1")
        for verb in spec.route.verbs:
            route, _ = rest_routes.resolve(verb, path)
            assert route is spec.route, f"{verb} {path} reaches {route.method}"


def test_routes_with_mutated_requests(fuzz_server, http, keys, world):
    """Every route: valid requests, and requests with their path, query, body, verb or
    headers broken in 1 to 3 places."""
    guard = support.DbGuard()

    @fuzz_settings(500)
    @given(st.data())
    def run(data):
        send_and_check(fuzz_server, http, guard, world, build_request(data.draw, keys))

    run()
    support.report_failures()


CONTRADICTION_SPECS = [s for s in SPECS if s.route.body and "{id}" in s.template]
QUERY_SPECS = [s for s in SPECS if s.route.query]


def contradiction_cases() -> list[tuple[Spec, tuple[str, ...]]]:
    """Each route whose path names a task and that reads a body, with each spelling of
    the body's task key alone and all of them together."""
    cases = []
    for spec in CONTRADICTION_SPECS:
        names = spec.body_task_keys
        cases += [(spec, (name,)) for name in names]
        if len(names) > 1:
            cases.append((spec, names))
    return cases


def test_bodies_naming_another_task_than_the_path(fuzz_server, http, keys, world):
    """The body names a task too, under any of its names (`id`, `taskId`, `task_id`; a
    push config's own `id` is not one). The path names the resource: another task in the
    body is refused. Route by route and spelling by spelling (hypothesis favours the first
    of a list, and a route or a spelling drawn rarely would go untested)."""
    guard = support.DbGuard()

    def case(spec: Spec, spelling: tuple[str, ...]):
        @fuzz_settings(6)
        @given(st.data())
        def run(data):
            request = build_request(data.draw, keys, [spec], "contradiction", spelling)
            send_and_check(fuzz_server, http, guard, world, request)

        return run

    for spec, spelling in contradiction_cases():
        case(spec, spelling)()
    support.report_failures()


def test_query_parameters_typed_right_and_wrong(fuzz_server, http, keys, world):
    """The GET routes with query parameters, each request with 1 to 3 of them edited:
    wrong types (`ten`, `1.5`, `--5`, `yes`), repeated, unknown, misspelt."""
    guard = support.DbGuard()

    @fuzz_settings(150)
    @given(st.data())
    def run(data):
        request = build_request(data.draw, keys, QUERY_SPECS, "query")
        send_and_check(fuzz_server, http, guard, world, request)

    run()
    support.report_failures()


VALID_SEND = encode(
    {
        "message": {"messageId": "m-raw", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": True},
    }
)
raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b" ",
            b"null",
            b"[]",
            b"[{}]",
            b'"x"',
            b"1",
            b"true",
            b"NaN",
            b"-Infinity",
            b"1e400",
            b'"\\ud800"',
            b'{"\\u0000": 1}',
            b"\xef\xbb\xbf" + VALID_SEND,  # UTF-8 BOM
            VALID_SEND.decode().encode("utf-16"),
            VALID_SEND.decode().encode("utf-32"),
            b"\xff\xfe\x00",
            b"\xc3\x28",
            VALID_SEND[:-1],
            VALID_SEND + b"garbage",
            VALID_SEND + b"\n" + VALID_SEND,
            b'{"message": 1, "message": {}}',
            b'{"configuration": {"historyLength": 1e400}}',
            b'{"configuration": {"historyLength": 1' + b"0" * 5000 + b"}}",
            b"[" * 100_000 + b"]" * 100_000,
            b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
            b"{'message': {}}",
            b"message=hi",
            b"\x00" * 64,
        ]
    ),
    st.builds(lambda b, cut: b[:cut], st.just(VALID_SEND), st.integers(0, len(VALID_SEND))),
    st.builds(
        lambda n: b'{"metadata":{"x":"' + b"y" * n + b'"}}',
        st.sampled_from([1_000_001, 1_200_000]),
    ),
)
BODY_SPECS = [s for s in SPECS if s.route.body]


def test_bodies_that_are_not_json_objects(fuzz_server, http, keys, world):
    """The body routes with bodies that are not JSON, not an object, in other encodings,
    under every content type, and over the size limit."""
    guard = support.DbGuard()

    @fuzz_settings(200)
    @given(st.sampled_from(BODY_SPECS), raw_bodies, st.data())
    def run(spec, body, data):
        ids = {"id": Target(data.draw).id} if "{id}" in spec.template else {}
        headers = rest_headers(data.draw, keys, spec, True)
        request = Request(spec, "POST", ids, [], body, headers, None, ["raw body"])
        send_and_check(fuzz_server, http, guard, world, request)

    run()
    support.report_failures()


def test_the_generator_reaches_every_part_of_a_request():
    """The request builder itself: ids land in the path (encoded), typed query values as
    §11.5 writes them, and a dot-only id stays in its segment."""
    spec = next(s for s in SPECS if s.method == "GetTaskPushNotificationConfig")
    request = Request(spec, "GET", {"id": "a/b", "config": ".."}, [], None, {}, None, [])
    assert request.url() == PREFIX + "tasks/a%2Fb/pushNotificationConfigs/%2E%2E"
    assert not request.addressed
    spec = next(s for s in SPECS if s.method == "ListTasks")
    query = [("pageSize", _typed(5)), ("includeArtifacts", _typed(True)), ("x", "\ud800")]
    request = Request(spec, "GET", {}, query, None, {}, None, [])
    assert request.url() == PREFIX + "tasks?pageSize=5&includeArtifacts=true&x=%ED%A0%80"
    assert may_be_unparsable(b"NaN") and may_be_unparsable(encode([support.nested(600)]))
    assert not may_be_unparsable(b'{"a": [1, 2]}')


def test_the_database_guard_sees_what_the_server_writes_through_rest(
    fuzz_server, http, keys, world
):
    """The oracle itself: a write made by the server process through REST (a send, a
    cancel) shows up as a change, and a refused request as none."""
    guard = support.DbGuard()
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    before = guard.before(len(world.made))
    answer = support.exchange(http, SURFACE, f"{PREFIX}tasks/nope:cancel", b"", headers)
    assert answer.status == 404, answer.describe()
    assert guard.changed_since(before) == ""
    before = guard.before(len(world.made))
    body = encode(
        {
            "message": {"messageId": "m-guard", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": True},
        }
    )
    answer = support.exchange(http, SURFACE, f"{PREFIX}message:send", body, headers)
    assert answer.status == 200, answer.describe()
    assert "a2a.Task: +1" in guard.changed_since(before)
    task_id = support.strict_loads(answer.text)["task"]["id"]
    before = guard.before(len(world.made))
    answer = support.exchange(http, SURFACE, f"{PREFIX}tasks/{task_id}:cancel", b"", headers)
    assert answer.status == 200, answer.describe()
    assert "a2a.Task: +0 -0 ~1" in guard.changed_since(before)


# --- found by this fuzzer, fixed: each bug in its smallest forms ----------------------------
# One test per bug: each test costs a database flush.


def _spec(method: str) -> Spec:
    return next(s for s in SPECS if s.method == method)


def _full_key(keys) -> dict[str, Any]:
    return {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}


def _reproduce(server, http, world, requests: list[Request]) -> None:
    """Send each request with the property checked (known bugs included); fail listing
    every one that broke it."""
    guard = support.DbGuard()
    for request in requests:
        send_and_check(server, http, guard, world, request)
    support.report_failures()


def test_found_a_double_minus_in_an_integer_query_parameter(fuzz_server, http, keys, world):
    """GET tasks?pageSize=--5 and GET tasks/{id}?historyLength=--1 were a 500 with a logged
    traceback (lstrip("-") took every minus); a 400 naming the parameter is due."""
    h, working = _full_key(keys), {"id": Ref("task", "working")}
    _reproduce(
        fuzz_server,
        http,
        world,
        [
            Request(_spec("ListTasks"), "GET", {}, [("pageSize", "--5")], None, h, None, []),
            Request(
                _spec("GetTask"), "GET", working, [("historyLength", "--1")], None, h, None, []
            ),
        ],
    )


def test_found_a_push_config_body_naming_another_task_than_the_path(fuzz_server, http, keys, world):
    """POST tasks/A/pushNotificationConfigs with `task_id: B` in the body must be refused
    (as `taskId: B` is, and as any task key is on the task routes). It was not: camelize
    let `task_id` overwrite `taskId`, so the config landed on B."""
    path_task, other = world.task("working").id, world.task("submitted").id
    url = f"{PREFIX}tasks/{path_task}/pushNotificationConfigs"
    hook = "https://hooks.example.com/taskdeck"
    statuses = []
    for body in (
        {"taskId": path_task, "task_id": other, "url": hook},
        {"task_id": other, "url": hook},
    ):
        answer = support.exchange(http, SURFACE, url, encode(body), _full_key(keys))
        statuses.append(answer.status)
    configs = apps.get_model("push", "PushConfig").objects.values_list("task_id", flat=True)
    assert statuses == [400, 400], (
        f"answered {statuses}; configs on {list(configs)} (path {path_task}, body {other})"
    )


def test_found_paths_under_the_binding_it_does_not_answer(fuzz_server, http, keys, world):
    """POST or GET /a2a/rest/, GET /a2a/rest/tasks/a%0Ab were Django's HTML 404 page
    (`<path:path>` needs a character and stops at a newline)."""
    headers = _full_key(keys)
    requests = [
        Request(_spec("SendMessage"), "POST", {}, [], None, headers, "root", []),
        Request(_spec("GetExtendedAgentCard"), "GET", {}, [], None, headers, "root", []),
        Request(_spec("GetTask"), "GET", {"id": "a\nb"}, [], None, headers, None, []),
    ]
    _reproduce(fuzz_server, http, world, requests)


def test_found_a_body_over_the_limit_is_refused_without_aip_193(fuzz_server, http, keys, world):
    """POST /a2a/rest/message:send with a body over MAX_REQUEST_BYTES was a 413
    `{"detail"}` from the Daphne patch, not AIP-193."""
    padding = "y" * settings.TASKDECK["MAX_REQUEST_BYTES"]
    body = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": padding}]}}
    request = Request(_spec("SendMessage"), "POST", {}, [], body, _full_key(keys), None, [])
    _reproduce(fuzz_server, http, world, [request])
