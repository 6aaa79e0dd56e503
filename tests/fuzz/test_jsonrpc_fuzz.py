"""Fuzzing POST /a2a/ over real HTTP: every method (A2A 0.3 names, 1.0 names with
`A2A-Version: 1.0`, the pause extension, push configs) with its params mutated field by
field, broken envelopes, unknown methods, bodies that are not JSON, wrong content types.

The property, for every request: HTTP 200 or 4xx, never 5xx; a well-formed JSON-RPC
response (`jsonrpc`, `id`, exactly one of result / error, an integer code and a string
message), or an SSE stream of them for the streaming methods; no traceback in the answer
and nothing logged at ERROR by the server; no internal error (-32603); and when the answer
is an error, the database is exactly as it was.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a.protocol.methods import METHODS
from tests.fuzz import support
from tests.fuzz.conftest import STATES
from tests.fuzz.support import Raw, Ref, encode, fuzz_settings, strings

pytestmark = [pytest.mark.django_db(transaction=True), support.TIMEOUT]

BINDU = "https://getbindu.com/extensions/pause-resume/v1"
STATE_10 = {s: "TASK_STATE_" + s.upper().replace("-", "_") for s in STATES}
SKILLS = ["approval", "ci-wait", "scheduled", "batch", "budget", "tck"]
STREAMING = {name for name, m in METHODS.items() if m.streaming}
V10 = {name for name, m in METHODS.items() if m.version == "1.0"}
ALL_METHODS = sorted(METHODS)
INTERNAL_ERROR = -32603


# --- valid params, method by method --------------------------------------------------------


class Target:
    """Which task a request names: one in a given state (a Ref, looked up when the
    request is sent), one that does not exist, or a hostile string."""

    def __init__(self, draw, states=STATES) -> None:
        if support.chance(draw, 8):
            self.kind = draw(st.sampled_from(["missing", "weird"]))
        else:
            self.kind = draw(st.sampled_from(list(states)))
        self.state = self.kind if self.kind in STATES else "missing"
        if self.kind == "new":  # message/send without a taskId
            self.id: Any = None
        elif self.kind == "weird":
            self.id = draw(strings)
        else:
            self.id = Ref("task", self.state)

    @property
    def context_id(self) -> Ref:
        return Ref("context", self.state)


# Mostly ordinary text; hostile strings often; ~100 000 characters now and then.
TEXTS = st.one_of(*[st.just("Roll out 2.14")] * 4, *[strings] * 4, support.huge_string())


def _part(draw, v10: bool) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "text", "data", "file-uri", "file-bytes"]))
    text = draw(TEXTS)
    if kind == "text":
        return {"text": text} if v10 else {"kind": "text", "text": text}
    if kind == "data":
        data = draw(support.free_objects)
        return {"data": data} if v10 else {"kind": "data", "data": data}
    if kind == "file-uri":
        uri = "https://files.example.com/report.pdf"
        if v10:
            return {"url": uri, "mediaType": "application/pdf", "filename": "r.pdf"}
        return {"kind": "file", "file": {"uri": uri, "mimeType": "application/pdf"}}
    raw = base64.b64encode(b"%PDF-1.4 fuzz").decode()
    return {"raw": raw} if v10 else {"kind": "file", "file": {"bytes": raw, "name": "f.pdf"}}


def _answer_part(draw, target: Target, v10: bool) -> dict[str, Any]:
    """An a2a.input.response to the task's open request (values sometimes wrong)."""
    values = draw(
        st.sampled_from(
            [
                {"decision": "approve"},
                {"decision": {"decision": "reject", "comment": "no"}},
                {"decision": "maybe"},
                {"note": "only a note"},
                {},
            ]
        )
    )
    data = {
        "type": "a2a.input.response",
        "requestId": draw(st.sampled_from([Ref("request", target.state), "req-nope"])),
        "values": values,
    }
    return {"data": data} if v10 else {"kind": "data", "data": data}


def message_params(draw, v10: bool) -> dict[str, Any]:
    target = Target(draw, ["new", "new", "new", *STATES])
    parts = [_part(draw, v10) for _ in range(draw(st.integers(1, 3)))]
    if target.kind == "input-required" and draw(st.booleans()):
        parts = [_answer_part(draw, target, v10)]
    msg: dict[str, Any] = {
        "role": "ROLE_USER" if v10 else "user",
        "messageId": str(uuid.uuid4()),
        "parts": parts,
    }
    if not v10 and draw(st.booleans()):
        msg["kind"] = "message"
    if target.id is not None:
        msg["taskId"] = target.id
        if draw(st.booleans()):
            msg["contextId"] = target.context_id
    elif draw(st.booleans()):
        msg["contextId"] = str(uuid.uuid4())
    if support.chance(draw, 4):
        msg["referenceTaskIds"] = [Ref("task", draw(st.sampled_from([*STATES, "missing"])))]
    if draw(st.booleans()):
        msg["metadata"] = draw(st.one_of(st.just({"origin": "fuzz"}), support.free_objects))
    params: dict[str, Any] = {"message": msg}
    config: dict[str, Any] = {}
    if v10:
        config["returnImmediately"] = draw(st.sampled_from([True, True, True, False]))
    elif support.chance(draw, 8):
        config["blocking"] = draw(st.booleans())
    if draw(st.booleans()):
        config["historyLength"] = draw(st.integers(0, 5))
    if draw(st.booleans()):
        config["acceptedOutputModes"] = ["text/plain", "application/json"]
    if config:
        params["configuration"] = config
    if draw(st.booleans()):
        params["metadata"] = {"skill": draw(st.sampled_from([*SKILLS, "no-such-skill"]))}
    elif support.chance(draw, 4):
        params["metadata"] = draw(support.free_objects)
    return params


def task_params(draw, v10: bool, extra: dict | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"id": Target(draw).id}
    for key, strategy in (extra or {}).items():
        if draw(st.booleans()):
            params[key] = draw(strategy)
    return params


def _id_key(draw, v10: bool) -> str:
    if v10:
        return draw(st.sampled_from(["taskId", "id", "task_id"]))
    return draw(st.sampled_from(["taskId", "taskId", "id", "task_id"]))


conditions = st.fixed_dictionaries(
    {},
    optional={
        "onEvent": st.sampled_from(["ci.build.completed:1234", "deploy.done", "x y"]),
        "trigger": st.fixed_dictionaries(
            {"event": st.sampled_from(["deploy.finished", "ci"])},
            optional={
                "match": st.one_of(
                    st.just({"env": "prod", "build.number": 7}), support.free_objects
                )
            },
        ),
        "timeout": st.one_of(
            st.fixed_dictionaries(
                {"durationMinutes": st.sampled_from([1, 30, 527040, 527041, 0])},
                optional={"onTimeout": st.sampled_from(["fail", "resume_with_summary"])},
            ),
            st.fixed_dictionaries(
                {
                    "durationMinutes": st.just(5),
                    "onTimeout": st.just("resume_with_input"),
                    "input": support.free_values,
                }
            ),
        ),
    },
)


def pause_params(draw, v10: bool) -> dict[str, Any]:
    params: dict[str, Any] = {_id_key(draw, v10): Target(draw).id}
    if draw(st.booleans()):
        params["reason"] = draw(st.one_of(st.just("release freeze"), strings))
    if draw(st.booleans()):
        params["mode"] = draw(
            st.sampled_from(["finish_step", "interrupt_immediate", "wait_for_completion", "x"])
        )
    if support.chance(draw, 4):
        params["resumeWhen"] = draw(conditions)
    if support.chance(draw, 4):
        params["metadata"] = draw(support.free_objects)
    return params


def resume_params(draw, v10: bool) -> dict[str, Any]:
    target = Target(draw, ["paused-by-client", "paused-by-agent", *STATES])
    params: dict[str, Any] = {_id_key(draw, v10): target.id}
    handle = draw(st.sampled_from(["current", "current", "stale", "random", "none", "absent"]))
    if handle == "current":
        params["handle"] = Ref("handle", target.state)
    elif handle == "stale":
        params["handle"] = Ref("stale-handle")
    elif handle == "random":
        params["handle"] = f"suspend-{uuid.uuid4()}"
    elif handle == "none":
        params["handle"] = None
    if draw(st.booleans()):
        params["input"] = draw(support.free_values)
    if draw(st.booleans()):
        params["continueTranscript"] = draw(st.booleans())
    if support.chance(draw, 4):
        params["metadata"] = draw(support.free_objects)
    return params


def await_params(draw, v10: bool) -> dict[str, Any]:
    target = Target(draw, ["working", "working", *STATES])
    params: dict[str, Any] = {
        _id_key(draw, v10): target.id,
        "reason": draw(st.one_of(st.just("waiting on ci"), strings)),
    }
    if draw(st.booleans()):
        params["conditions"] = draw(conditions)
    if draw(st.booleans()):
        params["summary"] = draw(strings)
    if support.chance(draw, 4):
        params["metadata"] = draw(support.free_objects)
    return params


def list_params(draw, v10: bool) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        params["contextId"] = Target(draw).context_id
    if draw(st.booleans()):
        state = draw(st.sampled_from(STATES))
        if v10:
            params["status"] = STATE_10[state]
        else:
            params[draw(st.sampled_from(["state", "status"]))] = state
    if draw(st.booleans()):
        params["pageSize"] = draw(st.sampled_from([1, 2, 50, 100, 0, 101]))
    if draw(st.booleans()):
        params["pageToken"] = draw(
            st.one_of(
                st.just(""),
                strings,
                st.binary(max_size=40).map(lambda b: base64.urlsafe_b64encode(b).decode()),
                st.just(base64.urlsafe_b64encode(b"2024-01-01T00:00:00+00:00|x").decode()),
            )
        )
    if draw(st.booleans()):
        params["historyLength"] = draw(st.integers(0, 3))
    if not v10 and draw(st.booleans()):
        params["includeArtifacts"] = draw(st.booleans())
    if draw(st.booleans()):
        stamp = draw(st.sampled_from(["2024-01-01T00:00:00Z", "2999-01-01T00:00:00+02:00"]))
        params["statusTimestampAfter" if v10 else "lastUpdatedAfter"] = stamp
    return params


def _push_config(draw, v10: bool) -> dict[str, Any]:
    config: dict[str, Any] = {
        "url": draw(
            st.sampled_from(
                [
                    "https://hooks.example.com/taskdeck",
                    "http://127.0.0.1:9/hook",
                    "https://[::1]/x",
                    "ftp://example.com/",
                    "https://example.com:99999/",
                ]
            )
        )
    }
    if draw(st.booleans()):
        config["token"] = draw(st.sampled_from(["tok-123", "line\nbreak", ""]))
    if draw(st.booleans()):
        config["id"] = draw(st.sampled_from(["cfg-1", "cfg-2", "default"]))
    if draw(st.booleans()):
        auth: dict[str, Any] = {"credentials": "secret"}
        if v10:
            auth["scheme"] = draw(st.sampled_from(["Bearer", "Basic", "two words"]))
        else:
            auth["schemes"] = [draw(st.sampled_from(["Bearer", "Basic", "two words"]))]
        config["authentication"] = auth
    return config


def _config_id(draw, target: Target) -> Any:
    """One of the task's configs (by position), or an id it has none under."""
    choice = draw(st.integers(0, 3))
    if choice >= 2 or target.kind == "weird":
        return ["cfg-1", "nope"][choice % 2]
    return Ref("config", target.state, choice)


def push_params(name: str):
    def build(draw, v10: bool) -> dict[str, Any]:
        target = Target(draw)
        if name == "tasks/pushNotificationConfig/set":
            return {"taskId": target.id, "pushNotificationConfig": _push_config(draw, False)}
        if name == "CreateTaskPushNotificationConfig":
            return {"taskId": target.id, **_push_config(draw, True)}
        if name in ("tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/delete"):
            params = {"id": target.id}
            if name.endswith("delete") or draw(st.booleans()):
                params["pushNotificationConfigId"] = _config_id(draw, target)
            return params
        if name == "tasks/pushNotificationConfig/list":
            return {"id": target.id}
        if name == "ListTaskPushNotificationConfigs":
            return {"taskId": target.id}
        return {"taskId": target.id, "id": _config_id(draw, target)}

    return build


BUILDERS = {
    "message/send": message_params,
    "message/stream": message_params,
    "SendMessage": message_params,
    "SendStreamingMessage": message_params,
    "tasks/get": lambda d, v: task_params(
        d, v, {"historyLength": st.integers(0, 10), "metadata": st.just({})}
    ),
    "GetTask": lambda d, v: task_params(d, v, {"historyLength": st.integers(0, 10)}),
    "tasks/list": list_params,
    "ListTasks": list_params,
    "tasks/cancel": lambda d, v: task_params(d, v, {"reason": st.just("not needed")}),
    "CancelTask": lambda d, v: task_params(d, v),
    "tasks/resubscribe": lambda d, v: task_params(
        d, v, {"metadata": st.builds(lambda n: {"lastEventId": n}, st.integers(-1, 10**6))}
    ),
    "SubscribeToTask": lambda d, v: task_params(d, v),
    "GetExtendedAgentCard": lambda d, v: {},
    "agent/getAuthenticatedExtendedCard": lambda d, v: {},
    "tasks/pause": pause_params,
    "PauseTask": pause_params,
    "tasks/resume": resume_params,
    "ResumeTask": resume_params,
    "tasks/await_resumption": await_params,
    "AwaitTaskResumption": await_params,
}
for _name in METHODS:
    if "ushNotificationConfig" in _name:
        BUILDERS[_name] = push_params(_name)


def generic_params(draw, v10: bool) -> dict[str, Any]:
    """For a method added after this file was written: the task under every name."""
    task_id = Target(draw).id
    return {"id": task_id, "taskId": task_id}


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def snake_keys(value: Any) -> Any:
    """ProtoJSON accepts snake_case names: 1.0 params spelled that way."""
    if isinstance(value, dict):
        return {_snake(k) if k != "metadata" else k: snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


# --- headers -------------------------------------------------------------------------------

CONTENT_TYPES = [
    "application/json",
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "application/jsonrequest+json",
    "APPLICATION/JSON",
    None,
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "text/event-stream",
    "application/json; charset=latin-1",
    ";;;",
    "application/json;;",
]


def headers_for(draw, keys, method: str | None) -> dict[str, Any]:
    """Mostly what a client sends (the full key, JSON, the method's A2A-Version); now and
    then a wrong key, content type or version, a Bindu extension, a Last-Event-ID."""
    headers: dict[str, Any] = {}  # str, or bytes for what is not ASCII
    auth = "full"
    if support.chance(draw, 8):
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
    ctype = "application/json"
    if support.chance(draw, 4):
        ctype = draw(st.sampled_from(CONTENT_TYPES))
    headers["Content-Type"] = ctype or ""
    version = "1.0" if method in V10 else None if method else draw(st.sampled_from([None, "1.0"]))
    if support.chance(draw, 8):
        version = draw(st.sampled_from([None, "1.0", "0.3", "1", "2.0", "1.0\t1", "x", ""]))
    if version is not None:
        headers["A2A-Version"] = version
    if support.chance(draw, 8):
        headers["X-A2A-Extensions"] = draw(
            st.sampled_from([BINDU, f"https://example.com/ext, {BINDU}", ",,,", "x" * 500])
        )
    if support.chance(draw, 16):
        headers["Last-Event-ID"] = draw(
            st.sampled_from(
                ["0", "1", "abc", "-1", "99999999999999999999999999", "٣".encode(), "5\t5"]
            )
        )
    return headers


# --- the property --------------------------------------------------------------------------


def _rpc_id():
    return st.one_of(
        st.integers(-(2**70), 2**70),
        st.text(max_size=20),
        st.none(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(support.SPECIAL_STRINGS),
    )


def check_envelope(body: Any, sent_id: Any) -> dict[str, Any]:
    assert isinstance(body, dict), f"not a JSON-RPC response object: {body!r:.300}"
    assert body.get("jsonrpc") == "2.0", body
    assert "id" in body, body
    assert body["id"] is None or isinstance(body["id"], str | int | float), body
    assert not isinstance(body["id"], bool), body
    if sent_id is not _UNKNOWN:
        assert body["id"] in (sent_id, None), f"id {body['id']!r} answers request id {sent_id!r}"
    assert ("result" in body) != ("error" in body), f"needs exactly one of result/error: {body}"
    if "error" in body:
        error = body["error"]
        assert isinstance(error, dict), body
        assert isinstance(error.get("code"), int) and not isinstance(error["code"], bool), body
        assert isinstance(error.get("message"), str), body
        assert error["code"] != INTERNAL_ERROR, f"internal error: {body}"
    return body


_UNKNOWN = object()


def check_answer(answer: support.Exchange, sent_id: Any, method: Any, headers=None) -> bool:
    """Asserts the property; returns True when the answer is an error."""
    assert answer.status == 0 or answer.status < 500, answer.describe()
    if support.refused_by_http_layer(answer, headers or {}):
        return True
    assert answer.status in (0, 200) or 400 <= answer.status < 500, answer.describe()
    support.assert_no_traceback(answer.text)
    if answer.stream:
        if answer.timed_out and not answer.frames:
            # a subscription that has nothing to say yet: only streaming methods do that
            assert method in STREAMING, f"{method!r} went quiet: {answer.describe()}"
            return False
        assert answer.status == 200, answer.describe()
        assert method in STREAMING, f"{method!r} answered with a stream"
        assert answer.frames, f"a stream without data: {answer.describe()}"
        bodies = [check_envelope(support.strict_loads(f), sent_id) for f in answer.frames]
        return "error" in bodies[0]
    assert answer.content_type.startswith("application/json"), answer.describe()
    body = check_envelope(support.strict_loads(answer.text), sent_id)
    if answer.status == 401:
        assert answer.headers.get("WWW-Authenticate", "").startswith("Bearer"), answer.describe()
    if answer.status != 200:
        assert "error" in body, f"HTTP {answer.status} with a result: {answer.describe()}"
    return "error" in body


def send_and_check(server, http, guard, world, body: bytes, headers, sent_id, method, note: str):
    """One request: send it, check the answer, the server's log and (for an error) that
    the database is unchanged."""
    before = guard.before(len(world.made))
    answer = support.exchange(
        http,
        "a2a",
        "/a2a/",
        body,
        headers,
        stream_wait=1.5 if method in STREAMING else None,
    )
    context = f"{note}\nrequest: {body[:600]!r}\nheaders: {headers}\nanswer: {answer.describe()}"
    errors = server.new_errors()
    if errors:
        support.fail(f"the server logged an error:\n{support.log_summary(errors)}\n{context}")
    try:
        is_error = check_answer(answer, sent_id, method, headers)
    except AssertionError as exc:
        guard.forget()
        support.fail(f"{exc}\n{context}")
        return answer
    support.tally("a2a", "error answers" if is_error else "results")
    if not is_error:
        guard.forget()
    elif changes := guard.changed_since(before):
        support.fail(f"an error answer changed the database: {changes}\n{context}")
    return answer


# --- the tests -----------------------------------------------------------------------------


def test_every_method_is_covered():
    """Each method of the table has a params builder (new methods must get one)."""
    missing = sorted(set(METHODS) - set(BUILDERS))
    assert not missing, f"no fuzz params builder for {missing}; add one to BUILDERS"


def test_methods_with_mutated_params(fuzz_server, http, keys, world):
    """Valid envelopes for every method; params valid, or with 1 to 3 fields broken."""
    guard = support.DbGuard()

    @fuzz_settings(700)
    @given(st.data())
    def run(data):
        draw = data.draw
        method = draw(st.sampled_from(ALL_METHODS), label="method")
        v10 = method in V10
        params = BUILDERS.get(method, generic_params)(draw, v10)
        if v10 and support.chance(draw, 4):
            params = snake_keys(params)
        notes: list[str] = []
        if not support.chance(draw, 4):  # three in four get 1 to 3 fields broken
            params, notes = support.mutate(draw, params, max_mutations=3)
        params = world.resolve(params)
        rpc_id = draw(_rpc_id(), label="id")
        envelope = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
        if params == {} and draw(st.booleans()):
            del envelope["params"]
        headers = headers_for(draw, keys, method)
        note = f"{method} {notes}"
        send_and_check(
            fuzz_server, http, guard, world, encode(envelope), headers, rpc_id, method, note
        )

    run()
    support.report_failures()


envelope_methods = st.one_of(
    st.sampled_from(ALL_METHODS),
    st.sampled_from(
        [
            "tasks/nope",
            "message/Send",
            "rpc.discover",
            "",
            " tasks/get",
            "tasks/get\x00",
            "__init__",
            "tasks/pushNotificationConfig/set/x",
        ]
    ),
    strings,
)


@st.composite
def envelopes(draw) -> tuple[Any, Any, Any]:
    """(body value, the id a correct answer may carry, the method) for broken or odd
    envelopes."""
    shape = draw(
        st.sampled_from(["object", "object", "object", "object", "batch", "scalar", "empty"])
    )
    if shape == "batch":
        items = draw(st.lists(st.just({"jsonrpc": "2.0", "id": 1, "method": "tasks/list"})))
        return items, None, None
    if shape == "scalar":
        return draw(support.leaves), None, None
    if shape == "empty":
        return {}, None, None
    body: dict[str, Any] = {}
    for key, strategy in (
        ("jsonrpc", st.one_of(st.just("2.0"), st.just("2.0"), support.hostile)),
        ("id", st.one_of(_rpc_id(), support.hostile)),
        ("method", st.one_of(envelope_methods, envelope_methods, support.hostile)),
        ("params", st.one_of(st.just({}), st.just({"id": "x"}), support.hostile)),
    ):
        if not support.chance(draw, 8):
            body[key] = draw(strategy)
    for _ in range(draw(st.integers(0, 2))):
        body[draw(st.sampled_from(["result", "error", "extra", "ID", "Method"]))] = draw(
            support.hostile
        )
    rpc_id = body.get("id")
    if isinstance(rpc_id, Raw):  # what the server reads it as is its parser's business
        return body, _UNKNOWN, body.get("method")
    valid_id = rpc_id is None or (
        isinstance(rpc_id, str | int | float) and not isinstance(rpc_id, bool)
    )
    return body, rpc_id if valid_id else None, body.get("method")


def test_broken_envelopes(fuzz_server, http, keys, world):
    guard = support.DbGuard()

    @fuzz_settings(500)
    @given(envelopes(), st.data())
    def run(envelope, data):
        body, rpc_id, method = envelope
        headers = headers_for(data.draw, keys, method if isinstance(method, str) else None)
        send_and_check(
            fuzz_server,
            http,
            guard,
            world,
            encode(body),
            headers,
            rpc_id,
            method if isinstance(method, str) else None,
            "envelope",
        )

    run()
    support.report_failures()


VALID = b'{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{"pageSize":1}}'
raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b" ",
            b"null",
            b"NaN",
            b"Infinity",
            b"-Infinity",
            b"1e400",
            b'"\\ud800"',
            b"\xef\xbb\xbf" + VALID,  # UTF-8 BOM
            VALID.decode().encode("utf-16"),
            VALID.decode().encode("utf-32"),
            b"\xff\xfe\x00",
            b"\xc3\x28",
            VALID[:-1],
            VALID + b"garbage",
            VALID + b"\n" + VALID,
            b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"tasks/nope"}',
            b'{"jsonrpc":"2.0","id":1e400,"method":"tasks/list"}',
            b'{"jsonrpc":"2.0","id":NaN,"method":"tasks/list"}',
            b'{"jsonrpc":"2.0","id":1' + b"0" * 5000 + b',"method":"tasks/list"}',
            b'{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"pageSize":1e400}}',
            b"[" * 100_000 + b"]" * 100_000,
            b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
            b"{'jsonrpc': '2.0'}",
            b"jsonrpc=2.0&id=1&method=tasks%2Flist",
            b"\x00" * 64,
        ]
    ),
    st.builds(
        lambda b, cut: b[:cut],
        st.just(VALID),
        st.integers(0, len(VALID)),
    ),
    st.builds(
        lambda n: b'{"jsonrpc":"2.0","id":1,"method":"tasks/list","x":"' + b"y" * n + b'"}',
        st.sampled_from([1_000_001, 1_200_000]),
    ),
)


def test_bodies_that_are_not_json(fuzz_server, http, keys, world):
    guard = support.DbGuard()

    @fuzz_settings(200)
    @given(raw_bodies, st.data())
    def run(body, data):
        headers = headers_for(data.draw, keys, None)
        send_and_check(
            fuzz_server, http, guard, world, body, headers, _UNKNOWN, "tasks/list", "raw body"
        )

    run()
    support.report_failures()


def test_streaming_errors_are_sse_frames_of_json_rpc(fuzz_server, http, keys, world):
    """A 0.3 streaming method's error comes as one SSE frame holding a JSON-RPC error
    (checked by send_and_check); a 1.0 one as plain JSON."""
    for method in sorted(STREAMING):
        headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
        if method in V10:
            headers["A2A-Version"] = "1.0"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": 5}})
        guard = support.DbGuard()
        answer = send_and_check(
            fuzz_server, http, guard, world, body.encode(), headers, 1, method, method
        )
        assert answer.stream == (method not in V10), answer.describe()
    support.report_failures()


def test_raw_numbers_survive_the_round_trip():
    """The encoder itself: Raw fragments land where they were put."""
    assert encode({"a": Raw("1e400"), "b": [Raw("NaN")]}) == b'{"a": 1e400, "b": [NaN]}'


def test_the_database_guard_sees_what_the_server_writes(fuzz_server, http, keys, world):
    """The oracle itself: a write made by the server process (a valid send) shows up as a
    change, and a refused request as none."""
    guard = support.DbGuard()
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    refused = b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}'
    before = guard.before(len(world.made))
    support.exchange(http, "a2a", "/a2a/", refused, headers)
    assert guard.changed_since(before) == ""
    before = guard.before(len(world.made))
    body = encode(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "message/send",
            "params": {
                "message": {
                    "role": "user",
                    "messageId": "m-guard",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        }
    )
    support.exchange(http, "a2a", "/a2a/", body, headers)
    assert "a2a.Task: +1" in guard.changed_since(before)
