"""Inputs the fuzzers found that break the property, pinned one by one (exact bytes), so
each bug has a test that names it. They fail until the bug is fixed; several only on
PostgreSQL, whose jsonb refuses what SQLite stores (NUL, lone surrogates), and which
CI runs too.

The property is the fuzzers': never a 5xx, never -32603, a well-formed JSON answer,
nothing logged at ERROR, and a refused request leaves the database as it was.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard import roles
from tests.fuzz import support
from tests.fuzz.test_agui_fuzz import check_run_answer
from tests.fuzz.test_jsonrpc_fuzz import check_answer

pytestmark = pytest.mark.django_db(transaction=True)


def _send_rpc(fuzz_server, http, keys, body: bytes, *, v10: bool = False):
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    if v10:
        headers["A2A-Version"] = "1.0"
    before = support.snapshot()
    answer = support.exchange(http, "regressions", "/a2a/", body, headers)
    return answer, before


def _assert_rpc_property(fuzz_server, answer, before, sent_id, method):
    assert not (errors := fuzz_server.new_errors()), support.log_summary(errors)
    is_error = check_answer(answer, sent_id, method)
    if is_error:
        after = support.snapshot()
        assert after == before, support.diff(before, after)
    return support.strict_loads(answer.text)


def _send_message(text_part: str, metadata: str = "{}") -> bytes:
    return (
        '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user",'
        '"messageId":"m-fuzz","parts":[{"kind":"text","text":' + text_part + "}]},"
        '"metadata":' + metadata + "}}"
    ).encode()


# --- JSON-RPC (a2a/jsonrpc) ----------------------------------------------------------------


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_an_id_out_of_float_range_gets_a_json_answer(fuzz_server, http, keys, number):
    """id 1e400 parses as inf; the answer then says `"id": Infinity`, which is not JSON
    (seen: HTTP 200 '{"jsonrpc": "2.0", "id": Infinity, "result": …}'). Expected: valid
    JSON, e.g. -32600 with id null."""
    body = f'{{"jsonrpc":"2.0","id":{number},"method":"tasks/list"}}'.encode()
    answer, before = _send_rpc(fuzz_server, http, keys, body)
    _assert_rpc_property(fuzz_server, answer, before, None, "tasks/list")


def test_a_number_out_of_float_range_in_metadata_is_refused(fuzz_server, http, keys):
    """metadata {"x": 1e400}: stored as Infinity, which the database refuses (SQLite: CHECK
    JSON_VALID; PostgreSQL: invalid input syntax for type json) -> -32603 and an ERROR log.
    Expected: -32602 naming the field. The same holds for data parts, resume input,
    resumeWhen/conditions timeout input."""
    answer, before = _send_rpc(fuzz_server, http, keys, _send_message('"hi"', '{"x":1e400}'))
    _assert_rpc_property(fuzz_server, answer, before, 1, "message/send")


@pytest.mark.parametrize("text", ['"a\\u0000b"', '"\\ud800"'], ids=["nul", "lone-surrogate"])
def test_text_postgres_cannot_store_is_refused(fuzz_server, http, keys, text):
    """A text part with NUL or a lone surrogate: valid JSON, stored fine by SQLite, refused
    by PostgreSQL's jsonb ("\\u0000 cannot be converted to text", "Unicode low surrogate
    must follow a high surrogate") -> -32603. Expected: -32602 (or stored escaped)."""
    answer, before = _send_rpc(fuzz_server, http, keys, _send_message(text))
    _assert_rpc_property(fuzz_server, answer, before, 1, "message/send")


def test_deeply_nested_params_of_a_10_method_get_an_error(fuzz_server, http, keys):
    """A2A 1.0 params are camelized recursively in the view (wire10.camelize), outside any
    try: ~500 levels of nesting under a key that is not opaque raise RecursionError ->
    HTTP 500 "Server Error". Expected: a JSON-RPC answer (the 0.3 names take the same
    body: -32001 task not found)."""
    deep = "[" * 500 + "]" * 500
    body = f'{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"x","x":{deep}}}}}'
    answer, before = _send_rpc(fuzz_server, http, keys, body.encode(), v10=True)
    _assert_rpc_property(fuzz_server, answer, before, 1, "GetTask")


@pytest.mark.parametrize("method", ["tasks/get", "tasks/list"])
def test_a_history_length_beyond_64_bits_is_refused(fuzz_server, http, keys, method):
    """Found in review: historyLength 10**20 passed validation and overflowed in the query
    (-32603). Expected: -32602."""
    params = '{"id":"x","historyLength":100000000000000000000}'
    body = f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}'.encode()
    answer, before = _send_rpc(fuzz_server, http, keys, body)
    body = _assert_rpc_property(fuzz_server, answer, before, 1, method)
    assert body["error"]["code"] == -32602


@pytest.mark.parametrize("header", [b"\xb2", b"1" * 40], ids=["superscript-two", "40-digits"])
def test_a_last_event_id_that_is_not_an_event_id_is_refused(fuzz_server, http, keys, header):
    """Found in review: the header byte 0xB2 reads as "²" (latin-1), and "²".isdigit() is
    True, so int() raised (HTML 500); 40 digits reached the query. Expected: -32602."""
    headers = {
        "Authorization": f"Bearer {keys.full}",
        "Content-Type": "application/json",
        "Last-Event-ID": header,
    }
    body = b'{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"x"}}'
    before = support.snapshot()
    answer = support.exchange(http, "regressions", "/a2a/", body, headers)
    body = _assert_rpc_property(fuzz_server, answer, before, 1, "tasks/resubscribe")
    assert body["error"]["code"] == -32602


# --- POST /api/events (a2a/events_api.py) ----------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"name":"x","payload":{"a":1e400}}',
        '{"name":"x","payload":{"a":"\\u0000"}}',
        '{"name":"x","payload":{"\\udfff":1}}',
    ],
    ids=["1e400", "nul", "lone-surrogate"],
)
def test_an_event_payload_the_database_cannot_store_is_refused(fuzz_server, http, keys, body):
    """Seen: HTTP 500 (HTML "Server Error (500)"), IntegrityError / DataError logged; the
    first on SQLite and PostgreSQL, the others on PostgreSQL (SQLite stores them: 201).
    Expected: 400 naming the payload, or 201 where the database can store it."""
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    before = support.snapshot()
    answer = support.exchange(http, "regressions", "/api/events", body.encode(), headers)
    assert not (errors := fuzz_server.new_errors()), support.log_summary(errors)
    assert answer.status in (201, 400), answer.describe()
    assert isinstance(support.strict_loads(answer.text), dict), answer.describe()
    if answer.status == 400:
        assert support.snapshot() == before


# --- POST /agui/run (agui/runs.py) ------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"threadId": "t-nul", "runId": "r-nul",
         "messages": [{"id": "m", "role": "user", "content": "a\u0000b"}]},
        {"threadId": "t\u0000", "runId": "r", "messages": []},
    ],
    ids=["nul-in-message", "nul-in-thread-id"],
)  # fmt: skip
def test_a_run_with_text_postgres_cannot_store_ends_its_stream(fuzz_server, http, keys, body):
    """NUL in the user message or the threadId: on PostgreSQL start_run raises DataError,
    which escapes the SSE generator (it is outside the try): no RUN_ERROR, no end of the
    response, the client waits until its own timeout; Daphne logs "Exception inside
    application". Expected: RUN_ERROR (or 422), the stream closed, nothing changed."""
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    before = support.snapshot()
    answer = support.exchange(
        http, "regressions", "/agui/run", json.dumps(body).encode(), headers,
        max_frames=2, stream_wait=5,
    )  # fmt: skip
    assert answer.status, "no answer within 5 s: the stream hangs"
    assert not (errors := fuzz_server.new_errors()), support.log_summary(errors)
    verdict, _ = check_run_answer(answer, headers)
    if verdict == "refused":
        assert support.snapshot() == before


def test_an_oversized_run_gets_a_json_413(fuzz_server, http, keys):
    """A body over DATA_UPLOAD_MAX_MEMORY_SIZE (1 MB): request.body raises
    RequestDataTooBig -> an HTML 400 page and an ERROR with a traceback in the log (one per
    request). Expected: 413 with a JSON detail, as POST /a2a/ answers."""
    text = "x" * 1_100_000
    body = json.dumps(
        {
            "threadId": "t-big",
            "runId": "r-big",
            "messages": [{"id": "m", "role": "user", "content": text}],
        }
    ).encode()
    headers = {"Authorization": f"Bearer {keys.full}", "Content-Type": "application/json"}
    answer = support.exchange(http, "regressions", "/agui/run", body, headers)
    assert not (errors := fuzz_server.new_errors()), support.log_summary(errors)
    assert answer.status == 413, answer.describe()
    assert "detail" in support.strict_loads(answer.text)


# --- the dashboard (dashboard/) ----------------------------------------------------------------


def _operator(django_user_model) -> Client:
    roles.setup_groups()
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="auditor", password="pw-auditor")
    user.groups.add(Group.objects.get(name=roles.OPERATORS))
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def test_a_long_audit_search_is_not_a_500(django_user_model):
    """GET /audit?q=<60 000 characters>: the q filter becomes a LIKE pattern, which SQLite
    refuses over 50 000 bytes ("LIKE or GLOB pattern too complex", OperationalError) ->
    500 (dashboard/selectors.audit_entries). Expected: 200 (nothing found) or 400."""
    client = _operator(django_user_model)
    client.post("/tasks/no-such-task/cancel", {"reason": ""})  # one (refused) audit entry
    response = client.get("/audit", {"q": "x" * 60_000})
    assert response.status_code in (200, 400), response.status_code


@pytest.mark.parametrize(
    ("method", "url", "data"),
    [
        ("get", "/audit", {"q": "a\x00b"}),
        ("get", "/audit", {"who": "a\x00b"}),
        ("get", "/audit", {"task": "a\x00b"}),
        ("get", "/tasks/a%00b", {}),
        ("get", "/inbox/a%00b", {}),
        ("get", "/demo", {"guided": "a\x00b"}),
        ("post", "/tasks/a%00b/cancel", {"reason": "x"}),
        ("post", "/tasks/a%00b/pause", {"reason": "x", "mode": "finish_step"}),
        ("post", "/inbox/a%00b/answer", {"v.x": "1"}),
        ("post", "/bulk", {"action": "cancel", "scope": "selection", "ids": ["a\x00b"],
                           "reason": "x", "step": "confirm", "confirmed": ["a\x00b"]}),
        ("post", "/tasks/x/emit", {"name": "a", "payload": '{"a": "\\u0000"}'}),
    ],
)  # fmt: skip
def test_nul_in_a_dashboard_id_or_filter_is_not_a_500(django_user_model, method, url, data):
    """NUL in a task id, interrupt id, filter or event payload reaches a PostgreSQL query
    or insert ("PostgreSQL text fields cannot contain NUL (0x00) bytes", DataError) ->
    500; SQLite answers 404 / 200. Expected: 404 or 400 (or 200 with nothing found), as
    on SQLite."""
    client = _operator(django_user_model)
    response = getattr(client, method)(url, data)
    assert response.status_code < 500, response.status_code
