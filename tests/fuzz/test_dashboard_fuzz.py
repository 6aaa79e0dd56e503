"""Fuzzing the dashboard's forms and pages with the Django test client, signed in as an
operator (sometimes as a viewer, or not at all, or without a CSRF token): pause, resume,
cancel, emit, answer, bulk and demo forms with every field valid, missing, hostile or
unknown; page queries and paths with hostile values.

The property: no exception (a 500), a status the dashboard means (200, 302, 400, 403, 404,
405, 409), no traceback; GETs change nothing; a POST changes task data only when it
also wrote an "ok" audit entry (an action that went through), and a refused one leaves
task data as it was, adding at most "refused" audit entries.
"""

from __future__ import annotations

import re
import time
import traceback
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from dashboard import roles
from dashboard.models import AuditEntry
from tests.fuzz import support
from tests.fuzz.conftest import STATES
from tests.fuzz.support import Ref, fuzz_settings

pytestmark = [pytest.mark.django_db(transaction=True), support.TIMEOUT]
AUDIT = "dashboard.AuditEntry"
MEANT = {200, 302, 400, 403, 404, 405, 409}
SURROGATES = re.compile("[\ud800-\udfff]")


def _printable(text: str) -> str:
    """What a browser can send in a form or URL: lone surrogates become U+FFFD."""
    return SURROGATES.sub("\ufffd", text)


form_text = st.one_of(
    st.sampled_from(["", " ", "release freeze", "x" * 501]),
    support.strings.map(_printable),
    support.huge_string().map(_printable),
)
numbers_as_text = st.sampled_from(
    ["", "1", "30", "527040", "527041", "0", "-1", "1e3", "1.5", "NaN", "٣", "9" * 30, " 5 "]
)
JSON_TEXTS = st.sampled_from(
    [
        "",
        '{"budget": 200}',
        "[1, 2]",
        "null",
        "1e400",
        "NaN",
        "{",
        '{"a": "\\u0000"}',
        '{"a": "\\ud800"}',
        "[" * 5000 + "]" * 5000,
        '{"a":' * 900 + "1" + "}" * 900,
    ]
)
json_text = st.one_of(JSON_TEXTS, JSON_TEXTS, JSON_TEXTS, form_text)
next_urls = st.sampled_from(
    ["", "/inbox", "/", "https://evil.example/", "//evil.example/x", "javascript:alert(1)", "/demo"]
)


def task_ref(draw) -> Any:
    kind = draw(st.sampled_from([*STATES, "missing", "weird"]))
    if kind == "weird":  # in a URL path too: no 100 000-character ones
        return draw(support.strings.map(_printable).filter(lambda t: "/" not in t))
    return Ref("task", kind)


@st.composite
def dashboard_requests(draw) -> tuple[str, Any, dict[str, Any]]:
    """(method, path template parts, form or query fields)."""
    form = draw(
        st.sampled_from(
            [
                "pause",
                "pause",
                "resume",
                "resume",
                "cancel",
                "emit",
                "answer",
                "answer",
                "bulk",
                "demo-start",
                "get-board",
                "get-task",
                "get-inbox",
                "get-inbox-item",
                "get-audit",
                "get-demo",
            ]
        )
    )
    task = task_ref(draw)
    if form == "pause":
        fields = {
            "reason": draw(form_text),
            "mode": draw(st.sampled_from(["finish_step", "interrupt_immediate", "x", ""])),
            "timeout_minutes": draw(numbers_as_text),
            "on_timeout": draw(st.sampled_from(["resume_with_summary", "fail", "x", ""])),
        }
        return "POST", ("tasks", task, "pause"), fields
    if form == "resume":
        state = draw(st.sampled_from(["paused-by-client", "paused-by-agent", *STATES]))
        fields = {
            "handle": draw(
                st.sampled_from([Ref("handle", state), Ref("stale-handle"), "", "suspend-x"])
            ),
            "resume_input": draw(json_text),
        }
        if draw(st.booleans()):
            fields["continue_transcript"] = draw(st.sampled_from(["on", "", "false"]))
        return "POST", ("tasks", Ref("task", state), "resume"), fields
    if form == "cancel":
        return "POST", ("tasks", task, "cancel"), {"reason": draw(form_text)}
    if form == "emit":
        fields = {
            "name": draw(
                st.one_of(st.sampled_from(["ci.build.completed:1", "a b", ""]), form_text)
            ),
            "payload": draw(json_text),
        }
        return "POST", ("tasks", task, "emit"), fields
    if form == "answer":
        interrupt = draw(
            st.sampled_from([Ref("interrupt", "input-required")] * 3 + ["input-nope-1"])
        )
        fields = {
            "v.decision": draw(st.sampled_from(["approve", "reject", "", "maybe"])),
            "v.decision.comment": draw(st.one_of(st.just(""), form_text)),
            "v.note": draw(form_text),
            "next": draw(next_urls),
        }
        if draw(st.booleans()):
            fields["v.__text__"] = draw(form_text)
        return "POST", ("inbox", interrupt, "answer"), fields
    if form == "bulk":
        fields = {
            "action": draw(st.sampled_from(["pause", "resume", "cancel", "x"])),
            "scope": draw(st.sampled_from(["selection", "filter", "x"])),
            "ids": [task_ref(draw) for _ in range(draw(st.integers(0, 3)))],
            "reason": draw(form_text),
            "mode": draw(st.sampled_from(["finish_step", "wait_for_completion", "", "x"])),
            "state": draw(st.sampled_from(["", *STATES, "x"])),
            "q": draw(st.one_of(st.just(""), form_text)),
        }
        if draw(st.booleans()):
            fields["step"] = "confirm"
            fields["confirmed"] = [task_ref(draw) for _ in range(draw(st.integers(0, 3)))]
        return "POST", ("bulk",), fields
    if form == "demo-start":
        fields = {
            "skill": draw(st.sampled_from(["approval", "batch", "tck", "nope", ""])),
            "text": draw(form_text),
        }
        if draw(st.booleans()):
            fields["guided"] = "1"
        return "POST", ("demo", "start"), fields
    if form == "get-board":
        fields = {
            "state": draw(st.sampled_from(["", *STATES, "x"])),
            "skill": draw(form_text),
            "context": draw(form_text),
            "q": draw(form_text),
        }
        return "GET", ("",), fields
    if form == "get-task":
        return "GET", ("tasks", task), {"fragment": draw(st.sampled_from(["", "1"]))}
    if form == "get-inbox":
        return "GET", ("inbox",), {"q": draw(form_text), "fragment": "1"}
    if form == "get-inbox-item":
        return "GET", ("inbox", Ref("interrupt", "input-required")), {"next": draw(next_urls)}
    if form == "get-audit":
        fields = {
            k: draw(form_text)
            for k in ("who", "action", "task", "outcome", "q")
            if draw(st.booleans())
        }
        return "GET", ("audit",), fields
    return "GET", ("demo",), {"guided": draw(st.sampled_from(["", task]))}


def _flat(value: Any) -> Any:
    """Form fields are text: anything else the mutations put in is sent as its JSON."""
    if isinstance(value, list):
        return [_flat(v) for v in value]
    if isinstance(value, str):
        return _printable(value)
    return _printable(support.encode(value).decode())


class Dashboard:
    """Signed-in clients and the lookups for Refs (task ids, pause handles, interrupts)."""

    def __init__(self, world, django_user_model) -> None:
        roles.setup_groups()
        from django.contrib.auth.models import Group

        def user(name: str, group: str):
            u = django_user_model.objects.create_user(username=name, password="pw-" + name)
            u.groups.add(Group.objects.get(name=group))
            return u

        suffix = uuid.uuid4().hex[:6]
        self.operator = Client()
        self.operator.force_login(user(f"op-{suffix}", roles.OPERATORS))
        self.viewer = Client()
        self.viewer.force_login(user(f"view-{suffix}", roles.VIEWERS))
        self.strict = Client(enforce_csrf_checks=True)  # an operator without a CSRF token
        self.strict.force_login(user(f"csrf-{suffix}", roles.OPERATORS))
        self.anonymous = Client()
        self.world = world

    def lookup(self, ref: Ref) -> str:
        if ref.what == "interrupt":
            task = self.world.task(ref.state)
            return task.interrupts.filter(pending=True).values_list(
                "interrupt_id", flat=True
            ).first() or ("input-none-" + task.id)
        return self.world.lookup(ref)


def _url(parts: tuple) -> str:
    return "/" + "/".join(quote(str(p), safe="") for p in parts if p != "")


def test_dashboard_forms_and_pages(world, django_user_model):
    board = Dashboard(world, django_user_model)
    guard = support.DbGuard(exclude=frozenset({AUDIT}), in_process=True)
    statuses: dict[int, int] = {}

    @fuzz_settings(100)
    @given(st.data())
    def run(data):
        draw = data.draw
        method, path, fields = draw(dashboard_requests())
        notes: list[str] = []
        if draw(st.booleans()):
            fields, notes = support.mutate(draw, fields, max_mutations=2)
            if not isinstance(fields, dict):
                fields = {"x": fields}
        who = "operator"
        if support.chance(draw, 8):
            who = draw(st.sampled_from(["viewer", "anonymous", "strict"]))
        client = getattr(board, who)
        url = _url(support.resolve(path, board.lookup))
        fields = {str(k): _flat(v) for k, v in support.resolve(fields, board.lookup).items()}
        context = f"{who} {method} {url} {notes}\nfields: {str(fields)[:600]}"
        before = guard.before(len(world.made))
        audit_before = AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
        started = time.monotonic()
        try:
            response = client.post(url, fields) if method == "POST" else client.get(url, fields)
        except Exception as exc:
            guard.forget()
            support.fail(
                f"the request raised (a 500): {type(exc).__name__}: {str(exc)[:300]}\n"
                f"{context}\n{traceback.format_exc()[-1500:]}"
            )
            return
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        support.tally("dashboard", f"HTTP {response.status_code}")
        support.count("dashboard", time.monotonic() - started)
        body = response.content.decode(errors="replace") if not response.streaming else ""
        if response.status_code not in MEANT:
            support.fail(f"HTTP {response.status_code}: {body[:500]}\n{context}")
        try:
            support.assert_no_traceback(body)
        except AssertionError as exc:
            support.fail(f"{exc}\n{context}")
        new_audit = list(
            AuditEntry.objects.filter(id__gt=audit_before).values_list("outcome", flat=True)
        )
        went_through = "ok" in new_audit
        if method == "GET" and new_audit:
            support.fail(f"a page view wrote audit entries {new_audit}\n{context}")
        if went_through:
            guard.forget()
        elif changes := guard.changed_since(before):
            support.fail(
                f"HTTP {response.status_code} with no action audited as ok changed task data:"
                f" {changes}\naudit: {new_audit}\n{context}"
            )

    run()
    support.report_failures()
    assert statuses.get(200, 0) > 10 and statuses.get(302, 0) > 10, statuses
    assert statuses.get(400, 0) + statuses.get(409, 0) > 10, statuses
