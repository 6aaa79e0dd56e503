"""a2a.jsonsafe: what the entry points refuse before a write, and where they say it is."""

from __future__ import annotations

import pytest

from a2a import jsonsafe


@pytest.mark.parametrize(
    ("value", "path", "why"),
    [
        ({"a": [1, {"b": "x\x00y"}]}, "a.1.b", "contains a NUL character"),
        (["ok", "\ud800"], "1", "contains an unpaired surrogate (\\ud800-\\udfff)"),
        ({"k": {"\udfff": 1}}, "k", "has a key that contains an unpaired surrogate"),
        ({"n": float("inf")}, "n", "is a number too large for JSON"),
        ({"n": float("nan")}, "n", "is a number too large for JSON"),
    ],
)
def test_the_first_problem_is_named_with_its_path(value, path, why):
    found = jsonsafe.problem(value)
    assert found is not None
    assert found.path == path
    assert found.why.startswith(why)


def test_storable_values_pass_unchanged():
    value = {"text": "héllo ✓ 😀", "n": [1, 2.5, -0.0, 10**18], "ok": True, "none": None}
    assert jsonsafe.problem(value) is None
    assert jsonsafe.check(value) is value


def test_nesting_is_limited_without_recursion():
    deep: list = []
    for _ in range(100_000):  # far beyond Python's recursion limit
        deep = [deep]
    found = jsonsafe.problem(deep)
    assert found is not None and "nested deeper than" in found.why
    shallow = [[[]]]
    assert jsonsafe.problem(shallow, max_depth=3) is None
    assert jsonsafe.problem(shallow, max_depth=2) is not None


@pytest.mark.parametrize("text", ["1e400", "-1e400", "NaN", "Infinity", "[-Infinity]"])
def test_loads_refuses_numbers_json_cannot_write_back(text):
    with pytest.raises(ValueError):
        jsonsafe.loads(text)


def test_loads_keeps_ordinary_numbers():
    assert jsonsafe.loads('{"a": 1e300, "b": 12, "c": -0.5}') == {"a": 1e300, "b": 12, "c": -0.5}


@pytest.mark.parametrize("n", [2**63, -(2**63) - 1, 10**20])
def test_integers_beyond_64_bits_are_named(n):
    found = jsonsafe.problem({"configuration": {"historyLength": n}})
    assert found is not None and found.path == "configuration.historyLength"
    assert jsonsafe.problem({"n": 2**63 - 1, "m": -(2**63), "ok": True}) is None
