"""What the fuzz tests share: hypothesis settings, hostile JSON values (including JSON text
Python's json module cannot write: 1e400, NaN, 100 000 levels of nesting), a snapshot of
every row a request could write, and an HTTP exchange recorded for the checks.

Budgets: every test runs a fixed number of examples, derandomized, so CI sends the same
requests every run. `TASKDECK_FUZZ_SCALE=20` multiplies the examples (a longer local
run); `TASKDECK_FUZZ_RANDOM=1` draws fresh examples instead of the fixed sequence.

Failures: a test sends all its examples and then fails once, listing every kind of
failure with the exact request that showed it (a live server makes shrinking slow and
its state makes it flaky). `TASKDECK_FUZZ_SHRINK=1` stops at the first failure instead
and lets hypothesis shrink it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.apps import apps
from django.db import connection
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("TASKDECK_FUZZ_SCALE", "1"))
RANDOM = os.environ.get("TASKDECK_FUZZ_RANDOM") == "1"
SHRINK = os.environ.get("TASKDECK_FUZZ_SHRINK") == "1"
FAILURES: list[str] = []
# pytest-timeout's 120 s per test, stretched for longer runs
TIMEOUT = pytest.mark.timeout(int(120 * max(1.0, SCALE)))


def fuzz_settings(examples: int):
    """`examples` per run (times TASKDECK_FUZZ_SCALE), reproducible unless
    TASKDECK_FUZZ_RANDOM=1. No example database: derandomized runs need none, and each
    failure names its request in full anyway."""
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        derandomize=not RANDOM,
        database=None,
        print_blob=RANDOM,
        suppress_health_check=list(HealthCheck),
        phases=list(Phase) if SHRINK else [Phase.explicit, Phase.generate],
    )


def fail(message: str) -> None:
    """Record a failure (raise it at once with TASKDECK_FUZZ_SHRINK=1)."""
    if SHRINK:
        raise AssertionError(message)
    FAILURES.append(message)


def report_failures() -> None:
    """Fail the test if any example failed: each kind once (grouped by its first two
    lines), with how often it happened and the first request that showed it."""
    if not FAILURES:
        return
    groups: dict[str, list[str]] = {}
    for failure in FAILURES:
        groups.setdefault("\n".join(failure.splitlines()[:2])[:200], []).append(failure)
    total = len(FAILURES)
    FAILURES.clear()
    lines = [f"{total} failing requests, {len(groups)} kinds:"]
    for failures in groups.values():
        lines.append(f"[{len(failures)}x] {failures[0][:3000]}")
        lines.append("-" * 40)
    raise AssertionError("\n".join(lines))


def log_summary(text: str) -> str:
    """The gist of what the server logged: each record's first line and the exception
    line(s) that end its traceback."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("ERROR ", "CRITICAL ")):
            out.append(line[:300])
        elif (
            line
            and not line[0].isspace()
            and not line.startswith("Traceback")
            and (i + 1 == len(lines) or not lines[i + 1].startswith(" "))
        ):
            out.append("  " + line[:300])
    return "\n".join(dict.fromkeys(out)) or text[-1500:]


# --- counting ------------------------------------------------------------------------------

STATS: dict[str, dict[str, float]] = {}


def count(surface: str, seconds: float = 0.0) -> None:
    entry = STATS.setdefault(surface, {"requests": 0, "seconds": 0.0})
    entry["requests"] += 1
    entry["seconds"] += seconds


TALLY: dict[str, dict[str, int]] = {}


def tally(surface: str, outcome: str) -> None:
    """How answers went (taken / refused / …), for the summary: the fuzzers should reach
    both sides of every surface."""
    counts = TALLY.setdefault(surface, {})
    counts[outcome] = counts.get(outcome, 0) + 1


# --- choices -------------------------------------------------------------------------------


def chance(draw, one_in: int) -> bool:
    """True about once in `one_in` draws (a power of two). Hypothesis favours 0 and the
    bounds of `st.integers`, so `integers(0, 7) == 0` comes up far more often than 1/8;
    fair coin flips don't."""
    return all(draw(st.booleans()) for _ in range(one_in.bit_length() - 1))


# --- JSON text -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A JSON fragment written as is: what `json.dumps` refuses or cannot reach."""

    text: str


@dataclass(frozen=True)
class Ref:
    """A value taken from the database when the request is sent (a task id, its context,
    its current pause handle…), so that what hypothesis draws never depends on the
    database and every example can be replayed. `state` names the task: one in that
    state, or "missing" (an id no task has)."""

    what: str
    state: str = "missing"
    index: int = 0


def resolve(value: Any, lookup) -> Any:
    """`value` with every Ref replaced by `lookup(ref)`."""
    if isinstance(value, Ref):
        return lookup(value)
    if isinstance(value, dict):
        return {k: resolve(v, lookup) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(resolve(v, lookup) for v in value)
    return value


_MARK = "@@raw-" + uuid.uuid4().hex + "-"


def encode(value: Any) -> bytes:
    """JSON text of `value`, ASCII-escaped (so lone surrogates travel as \\ud800), with
    Raw fragments spliced in."""
    raws: list[str] = []

    def default(o: Any) -> str:
        if isinstance(o, Raw):
            raws.append(o.text)
            return f"{_MARK}{len(raws) - 1}"
        raise TypeError(f"cannot encode {type(o).__name__}")

    text = json.dumps(value, ensure_ascii=True, allow_nan=False, default=default)
    for i in reversed(range(len(raws))):  # reversed: "…-1" is a prefix of "…-10"
        text = text.replace(f'"{_MARK}{i}"', raws[i])
    return text.encode()


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def strict_loads(text: str | bytes) -> Any:
    """json.loads that refuses NaN / Infinity (Python writes them, JSON has none); an
    AssertionError when the text is not JSON."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise AssertionError(f"the answer is not valid JSON ({exc})") from None


def nested(depth: int, kind: str = "list", leaf: str = "1") -> Raw:
    if kind == "list":
        return Raw("[" * depth + leaf + "]" * depth)
    return Raw('{"a":' * depth + leaf + "}" * depth)


# --- hostile values ------------------------------------------------------------------------

EXTREME_NUMBERS = [
    0,
    -1,
    1,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    -(10**30),
    1e308,
    -1e308,
    5e-324,
    -0.0,
    0.5,
    1.5,
]
RAW_NUMBERS = [
    "1e400",  # a float Python reads as inf
    "-1e400",
    "1E+308",
    "NaN",
    "Infinity",
    "-Infinity",
    "1" + "0" * 5000,  # more digits than Python converts by default
    "-0",
    "0.0000000000000000000000000001",
    "123456789012345678901234567890",
]
SPECIAL_STRINGS = [
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\ud800",  # a lone surrogate: valid JSON text, not encodable as UTF-8
    "x\udfffy",
    "\ufeff",
    "\u202eevil",
    "😀" * 3,
    "é" * 5,
    "ß\u0301",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "%s%s%n",
    "{{ 7*7 }}",
    "../../etc/passwd",
    "null",
    "true",
    "0",
    "-1",
    "TASK_STATE_WORKING",
    "working",
    "paused-by-client",
    "suspended",
    "input-nope-1",
    "a" * 128,
    "a" * 129,
    "a" * 2001,
    "\r\nX-Injected: 1",
    "https://example.com/x",
    "http://127.0.0.1/",
    "2024-13-45T99:99:99Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999+14:00",
]


def huge_string() -> st.SearchStrategy[str]:
    """~100 000 characters, cheap to draw."""
    return st.tuples(
        st.sampled_from(["x", "é", "😀", "\x00", "\ud800", " ", '"', "\\"]),
        st.integers(60_000, 120_000),
    ).map(lambda t: t[0] * (t[1] // (2 if t[0] == "😀" else 1)))


def deep_value() -> st.SearchStrategy[Raw]:
    """Deep nesting: ~500 levels, the recursion limit's neighbourhood, and far beyond."""
    return st.builds(
        nested,
        st.one_of(
            st.integers(450, 550),
            st.integers(900, 1100),
            st.sampled_from([2, 64, 200, 5000, 100_000]),
        ),
        st.sampled_from(["list", "dict"]),
    )


short_text = st.text(max_size=24)
unicode_text = st.text(
    st.characters(exclude_categories=()),  # surrogates and controls included
    min_size=1,
    max_size=40,
)
strings = st.one_of(short_text, unicode_text, st.sampled_from(SPECIAL_STRINGS))
numbers = st.one_of(
    st.sampled_from(EXTREME_NUMBERS),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(RAW_NUMBERS).map(Raw),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, strings)
json_values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(short_text, st.sampled_from(SPECIAL_STRINGS)), inner, max_size=4),
    ),
    max_leaves=10,
)
# Where any JSON is allowed (metadata, data parts, resume input, event payloads): legal
# JSON that is hard to store or to write back (1e400, NUL, lone surrogates, deep nesting).
LEGAL_RAW_NUMBERS = ["1e400", "-1e400", "1E+308", "-0", "0.0000000000000000000000000001"]
free_values = st.one_of(
    json_values,
    st.sampled_from(LEGAL_RAW_NUMBERS).map(Raw),
    st.sampled_from(SPECIAL_STRINGS),
    st.builds(nested, st.integers(2, 900), st.sampled_from(["list", "dict"])),
)
free_objects = st.dictionaries(
    st.one_of(short_text, st.sampled_from(SPECIAL_STRINGS)), free_values, min_size=1, max_size=3
)
# Plain JSON most of the time, the hard cases now and then.
mostly_plain = st.one_of(json_values, json_values, json_values, free_values)
# What a mutation puts where a field was: wrong types, extremes, huge, deep, empty.
hostile = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    strings,
    st.builds(list),
    st.builds(dict),
    json_values,
    deep_value(),
    huge_string(),
)


# --- mutating a valid structure ------------------------------------------------------------


def paths(value: Any, prefix: tuple = (), limit: int = 60) -> list[tuple]:
    """Every path into dicts and lists of `value` (the root included), breadth-first."""
    out: list[tuple] = [prefix]
    queue = [(prefix, value)]
    while queue and len(out) < limit:
        path, node = queue.pop(0)
        if isinstance(node, dict | list):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                out.append((*path, key))
                if isinstance(child, dict | list):
                    queue.append(((*path, key), child))
    return out


def _parent(root: Any, path: tuple) -> Any:
    node = root
    for key in path[:-1]:
        node = node[key]
    return node


FIELD_NAMES = [
    "id",
    "taskId",
    "task_id",
    "contextId",
    "message",
    "messageId",
    "role",
    "parts",
    "kind",
    "text",
    "data",
    "file",
    "metadata",
    "configuration",
    "historyLength",
    "blocking",
    "returnImmediately",
    "handle",
    "input",
    "reason",
    "mode",
    "resumeWhen",
    "conditions",
    "summary",
    "continueTranscript",
    "pageSize",
    "pageToken",
    "state",
    "status",
    "lastEventId",
    "pushNotificationConfig",
    "url",
    "token",
    "authentication",
    "__proto__",
    "constructor",
]


def mutate(draw, value: Any, max_mutations: int = 3) -> tuple[Any, list[str]]:
    """`value` with 1..max_mutations edits (on a copy), and a description of each edit.

    A plain function taking `draw` (from `st.data()` or a composite), not a strategy:
    hypothesis caches strategies by their arguments, and a value passed as one could
    come back from the cache in place of a newer one."""
    value = copy.deepcopy(value)
    notes: list[str] = []
    for _ in range(draw(st.integers(1, max_mutations))):
        where = draw(st.sampled_from(paths(value)))
        op = draw(
            st.sampled_from(["replace", "replace", "delete", "add_key", "wrong_type", "rename"])
        )
        if op == "delete" and where:
            parent = _parent(value, where)
            del parent[where[-1]]
            notes.append(f"delete {where}")
        elif op == "add_key":
            node = value
            for key in where:
                node = node[key]
            if isinstance(node, dict):
                key = draw(st.one_of(st.sampled_from(FIELD_NAMES), short_text))
                node[key] = copy.deepcopy(draw(hostile))
                notes.append(f"add {(*where, key)}")
            elif isinstance(node, list):
                node.append(copy.deepcopy(draw(hostile)))
                notes.append(f"append {where}")
        elif op == "rename" and where and isinstance(_parent(value, where), dict):
            parent = _parent(value, where)
            new = draw(st.one_of(st.sampled_from(FIELD_NAMES), short_text))
            parent[new] = parent.pop(where[-1])
            notes.append(f"rename {where} -> {new!r}")
        else:
            # a copy: what strategies hand out may be shared (st.just), and later edits
            # of this example must not change what they hand out next time
            new = copy.deepcopy(
                draw(hostile if op == "replace" else _wrong_type(_at(value, where)))
            )
            if where:
                _parent(value, where)[where[-1]] = new
            else:
                value = new
            notes.append(f"{op} {where}")
    return value, notes


def _at(root: Any, path: tuple) -> Any:
    node = root
    for key in path:
        node = node[key]
    return node


def _wrong_type(current: Any) -> st.SearchStrategy:
    """A JSON value of another type than `current` (strings for numbers, numbers for
    strings, scalars for containers…)."""
    options = {
        "null": st.none(),
        "bool": st.booleans(),
        "int": st.sampled_from([0, 1, -1, 2**63, 5]),
        "float": st.sampled_from([0.5, 1e308, -0.0]),
        "str": st.sampled_from(["", "5", "true", "x", "null"]),
        "list": st.lists(st.sampled_from([1, "a", None, {}]), max_size=2),
        "dict": st.dictionaries(st.sampled_from(["a", "id"]), st.integers(), max_size=2),
    }
    kind = (
        "str"
        if isinstance(current, Ref)
        else "null"
        if current is None
        else "bool"
        if isinstance(current, bool)
        else "int"
        if isinstance(current, int)
        else "float"
        if isinstance(current, float)
        else "str"
        if isinstance(current, str)
        else "list"
        if isinstance(current, list)
        else "dict"
    )
    return st.one_of(*(s for k, s in options.items() if k != kind))


# --- the database --------------------------------------------------------------------------

# Everything a request could write. Not the API keys (authentication stamps last_used_at,
# at most once a minute) nor sessions.
SNAPSHOT_APPS = ("a2a", "runtime", "push", "agui", "django_tasks_database", "dashboard")
NOT_STATE = {"a2a.ApiKey"}


def _models(exclude: frozenset[str] = frozenset()) -> list:
    out = []
    for label in SNAPSHOT_APPS:
        try:
            config = apps.get_app_config(label)
        except LookupError:
            continue
        for model in config.get_models():
            name = model._meta.label
            if name not in NOT_STATE and name not in exclude:
                out.append(model)
    return out


def snapshot(exclude: frozenset[str] = frozenset()) -> dict[str, list[tuple]]:
    """Every row of every table a request could write, in primary-key order (raw rows:
    no model instances, no JSON decoding, so it stays cheap as the tables grow)."""
    quote = connection.ops.quote_name
    out: dict[str, list[tuple]] = {}
    with connection.cursor() as cursor:
        for model in _models(exclude):
            meta = model._meta
            # a composite key (ProjectionDue) has no one column: order by each of its own
            columns = [f.column for f in getattr(meta.pk, "fields", [meta.pk])]
            order = ", ".join(quote(c) for c in columns)
            cursor.execute(f"SELECT * FROM {quote(meta.db_table)} ORDER BY {order}")
            out[meta.label] = cursor.fetchall()
    return out


def write_marker() -> Any:
    """A value that moves whenever anyone commits a write: SQLite's data_version (changes
    committed by other connections, i.e. the server), PostgreSQL's next transaction id
    (any writing transaction in the cluster takes one). Equal markers mean nothing was
    written; different ones mean something may have been (then rows are compared)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA data_version")
        elif connection.vendor == "postgresql":
            cursor.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())")
        else:
            return None
        return cursor.fetchone()[0]


class DbGuard:
    """Compares the database before and after requests that were answered with an error.

    Cheap in the common case: the snapshot is taken only when the last one may be stale
    (a success answer, rows the test made itself, a moved write marker), and after an
    error the rows are compared only if the write marker moved. `in_process=True` for
    requests served on the test's own connection (the Django test client), which the
    SQLite marker cannot see: then every check compares rows."""

    def __init__(self, exclude: frozenset[str] = frozenset(), in_process: bool = False) -> None:
        self.exclude = exclude
        self.in_process = in_process
        self._cached: dict[str, list[tuple]] | None = None
        self._made = -1
        self._marker: Any = None

    def before(self, made: int) -> dict[str, list[tuple]]:
        marker = None if self.in_process else write_marker()
        fresh = (
            self._cached is not None
            and made == self._made
            and marker is not None
            and marker == self._marker
        )
        if not fresh:
            self._made = made
            self._marker = marker
            self._cached = snapshot(self.exclude)
        return self._cached

    def changed_since(self, before: dict[str, list[tuple]]) -> str:
        """ "" when nothing changed, else what did."""
        marker = None if self.in_process else write_marker()
        if marker is not None and marker == self._marker and before is self._cached:
            return ""
        after = snapshot(self.exclude)
        self._cached, self._marker = after, marker
        return "" if after == before else diff(before, after) or "row order changed"

    def forget(self) -> None:
        self._cached = None


def diff(before: dict[str, list[tuple]], after: dict[str, list[tuple]]) -> str:
    """Which tables changed and how (for the assertion message)."""
    lines = []
    for table in before:
        old = {row[0]: row for row in before[table]}
        new = {row[0]: row for row in after[table]}
        added = [new[k] for k in new.keys() - old.keys()]
        removed = [old[k] for k in old.keys() - new.keys()]
        changed = [(old[k], new[k]) for k in old.keys() & new.keys() if old[k] != new[k]]
        if added or removed or changed:
            lines.append(
                f"{table}: +{len(added)} -{len(removed)} ~{len(changed)} "
                f"{_short(added[:1] or removed[:1] or changed[:1])}"
            )
    return "; ".join(lines)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 400 else text[:400] + "…"


# --- one HTTP exchange ---------------------------------------------------------------------


@dataclass
class Exchange:
    """What was sent and what came back (the SSE frames' data, when it was a stream)."""

    status: int
    content_type: str
    text: str
    headers: httpx.Headers
    frames: list[str] = field(default_factory=list)
    stream: bool = False
    timed_out: bool = False  # an open stream that had nothing to say yet

    def describe(self) -> str:
        body = self.text if not self.stream else "\n".join(self.frames)
        return f"HTTP {self.status} {self.content_type}: {_short(body)}"


def exchange(
    http: httpx.Client,
    surface: str,
    path: str,
    body: bytes,
    headers: dict[str, str],
    *,
    max_frames: int = 1,
    stream_wait: float | None = None,
    verb: str = "POST",
) -> Exchange:
    """Send `body` (POST unless `verb` says otherwise); a text/event-stream answer is
    read up to `max_frames` frames (or until it ends), then the connection is dropped, as
    a client that lost interest.

    `stream_wait` (for methods that answer with a stream): how long to wait for the
    first bytes. A subscription to a quiet task may say nothing for a while (Daphne sends
    the headers with the first frame), which is then recorded as `timed_out`."""
    started = time.monotonic()
    timeout = httpx.Timeout(30.0, read=stream_wait) if stream_wait else httpx.Timeout(30.0)
    try:
        with http.stream(verb, path, content=body, headers=headers, timeout=timeout) as r:
            ctype = r.headers.get("content-type", "")
            if not ctype.startswith("text/event-stream"):
                r.read()
                return Exchange(r.status_code, ctype, r.text, r.headers)
            frames, data, timed_out = _read_frames(r, max_frames)
            return Exchange(
                r.status_code, ctype, data, r.headers, frames, stream=True, timed_out=timed_out
            )
    except httpx.ReadTimeout:
        if stream_wait is None:
            raise
        return Exchange(0, "", "", httpx.Headers(), stream=True, timed_out=True)
    finally:
        count(surface, time.monotonic() - started)


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _read_frames(r: httpx.Response, max_frames: int) -> tuple[list[str], str, bool]:
    """SSE frames' `data:` payloads (multi-line data joined by newlines), the raw text
    read, and whether the stream went quiet before `max_frames` frames came.

    Lines end at CR, LF or CRLF only, as the SSE spec says (not at U+2028 or U+0085,
    where str.splitlines() and so httpx's iter_lines() would also split)."""
    frames: list[str] = []
    data_lines: list[bytes] = []
    seen = bytearray()
    pending = b""
    try:
        for chunk in r.iter_bytes():
            seen += chunk
            pending += chunk
            *lines, pending = _LINE_END.split(pending)
            for line in lines:
                if line == b"":
                    if data_lines:
                        frames.append(b"\n".join(data_lines).decode("utf-8", "replace"))
                        data_lines = []
                        if len(frames) >= max_frames:
                            return frames, seen.decode("utf-8", "replace"), False
                elif line.startswith(b"data:"):
                    data_lines.append(line[5:].removeprefix(b" "))
    except httpx.ReadTimeout:
        return frames, seen.decode("utf-8", "replace"), True
    if pending.startswith(b"data:"):
        data_lines.append(pending[5:].removeprefix(b" "))
    if data_lines:
        frames.append(b"\n".join(data_lines).decode("utf-8", "replace"))
    return frames, seen.decode("utf-8", "replace"), False


def refused_by_http_layer(answer: Exchange, headers: dict[str, Any]) -> bool:
    """Daphne (Twisted) parses a multipart/form-data body itself and answers a body that
    is not multipart with a bare 400 before the application sees it: an HTTP-level
    refusal, not an application answer."""
    ctype = str(headers.get("Content-Type", "")).lower()
    return (
        ctype.startswith("multipart/")
        and answer.status == 400
        and answer.text == ""
        and not answer.content_type
    )


def assert_no_traceback(text: str) -> None:
    for marker in ("Traceback (most recent call last)", 'File "/', "Internal Server Error"):
        assert marker not in text, f"the answer shows server internals ({marker!r})"
