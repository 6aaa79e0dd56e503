"""Domain rules the services enforce themselves (`a2a.services.checks`), whichever door
called them: each service is called directly with a bad value and must raise
ValidationFailed (or its domain error) naming the field, and write nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from a2a import services
from a2a.errors import NotAllowedNow, ValidationFailed
from a2a.lifecycle import TransitionRefused
from a2a.models import Artifact, ExternalEvent, Suspension, Task
from tests.conftest import AGENT, CLIENT, task_maker, user_message

# Each test runs in a transaction rolled back at its end (no flush): the services' own
# atomic blocks nest as savepoints, and nothing here needs a commit (no other process).
pytestmark = pytest.mark.django_db


@pytest.fixture
def make_task(db):
    return task_maker()


NUL = "a\x00b"
LONE_SURROGATE = "a\ud800b"
TOO_BIG = 2**64  # beyond 64 bits
LARGEST = 2**63 - 1


def nested(depth: int) -> dict | int:
    """`depth` objects inside each other: {"a": {"a": … 1}}."""
    value: dict | int = 1
    for _ in range(depth):
        value = {"a": value}
    return value


TOO_DEEP = nested(65)
TOO_DEEP_PATH = ".".join(["a"] * 64)  # the object at depth 64 is the one refused


@pytest.fixture
def refuses(unchanged):
    """refuses(call, path) -> the error: `call()` raises ValidationFailed whose only path is
    `path`, and the database is as it was."""

    def check(call, path: str, error: type[Exception] = ValidationFailed) -> Exception:
        with unchanged(), pytest.raises(error) as info:
            call()
        if error is ValidationFailed:
            assert list(info.value.errors) == [path], info.value.errors
        return info.value

    return check


def msg(**over) -> services.IncomingMessage:
    fields = {"message_id": "m-1", "parts": [{"kind": "text", "text": "hi"}], **over}
    return services.IncomingMessage(**fields)


def text_part(text) -> list[dict]:
    return [{"kind": "text", "text": text}]


# --- create_task ---------------------------------------------------------------------------

BAD_MESSAGES = [
    pytest.param({"parts": []}, "message.parts", id="no-parts"),
    pytest.param({"parts": "hello"}, "message.parts", id="parts-not-a-list"),
    pytest.param({"parts": text_part("x") * 101}, "message.parts", id="too-many-parts"),
    pytest.param({"parts": [{"kind": "image"}]}, "message.parts.0.kind", id="unknown-kind"),
    pytest.param({"parts": ["hello"]}, "message.parts.0.kind", id="part-not-an-object"),
    pytest.param({"parts": text_part(NUL)}, "message.parts.0.text", id="nul-in-text"),
    pytest.param(
        {"parts": text_part(LONE_SURROGATE)}, "message.parts.0.text", id="surrogate-in-text"
    ),
    pytest.param({"parts": text_part(42)}, "message.parts.0.text", id="text-not-a-string"),
    pytest.param({"parts": text_part("x" * 200_001)}, "message.parts.0.text", id="text-too-long"),
    pytest.param(
        {"parts": [*text_part("ok"), {"kind": "data", "data": [1]}]},
        "message.parts.1.data",
        id="data-not-an-object",
    ),
    pytest.param(
        {"parts": [{"kind": "file", "file": "a.txt"}]}, "message.parts.0.file", id="file-bad"
    ),
    pytest.param(
        {"parts": [{"kind": "data", "data": {"k": NUL}}]},
        "message.parts.0.data.k",
        id="nul-in-data",
    ),
    pytest.param(
        {"parts": [{"kind": "data", "data": {"n": TOO_BIG}}]},
        "message.parts.0.data.n",
        id="huge-int-in-data",
    ),
    pytest.param({"message_id": ""}, "message.messageId", id="blank-message-id"),
    pytest.param({"message_id": "m" * 129}, "message.messageId", id="long-message-id"),
    pytest.param({"message_id": NUL}, "message.messageId", id="nul-message-id"),
    pytest.param({"role": "system"}, "message.role", id="role"),
    pytest.param({"metadata": {"x": NUL}}, "message.metadata.x", id="nul-in-message-metadata"),
    pytest.param({"metadata": ["x"]}, "message.metadata", id="message-metadata-not-object"),
    pytest.param({"reference_task_ids": "t-1"}, "message.referenceTaskIds", id="refs-not-a-list"),
    pytest.param({"reference_task_ids": [""]}, "message.referenceTaskIds.0", id="blank-ref"),
    pytest.param(
        {"reference_task_ids": ["no-such-task"]}, "message.referenceTaskIds", id="unknown-ref"
    ),
]


@pytest.mark.parametrize(("over", "path"), BAD_MESSAGES)
def test_create_task_refuses_a_bad_message(make_task, refuses, over, path):
    make_task()  # something in the database that must stay as it is
    refuses(
        lambda: services.create_task(msg(**over), actor=CLIENT, skill="approval"),
        path,
    )


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"skill": "no-such-skill"}, "skill", id="unknown-skill"),
        pytest.param({"skill": ""}, "skill", id="blank-skill"),
        pytest.param({"skill": None}, "skill", id="no-skill"),
        pytest.param({"metadata": {"x": NUL}}, "metadata.x", id="nul-in-metadata"),
        pytest.param({"metadata": {"x": float("inf")}}, "metadata.x", id="inf-in-metadata"),
        pytest.param({"metadata": {"n": TOO_BIG}}, "metadata.n", id="huge-int-in-metadata"),
        pytest.param({"metadata": {LONE_SURROGATE: 1}}, "metadata", id="surrogate-key"),
        pytest.param({"metadata": TOO_DEEP}, f"metadata.{TOO_DEEP_PATH}", id="deep-metadata"),
        pytest.param({"metadata": "x"}, "metadata", id="metadata-not-an-object"),
        pytest.param({"context_id": ""}, "message.contextId", id="blank-context"),
        pytest.param({"context_id": "c" * 129}, "message.contextId", id="long-context"),
        pytest.param({"context_id": NUL}, "message.contextId", id="nul-context"),
        pytest.param({"origin": services.Origin("email")}, "origin", id="unknown-door"),
        pytest.param(
            {"origin": services.Origin("acp", title="t" * 201)}, "origin.title", id="long-title"
        ),
        pytest.param({"origin": services.Origin("acp", title=NUL)}, "origin.title", id="nul-title"),
        pytest.param(
            {"origin": services.Origin("agui", ref=NUL)},
            "origin.ref",
            id="nul-ref",
        ),
    ],
)
def test_create_task_refuses_bad_task_values(make_task, refuses, kwargs, path):
    make_task()
    kwargs = {"skill": "approval", **kwargs}
    refuses(lambda: services.create_task(user_message(), actor=CLIENT, **kwargs), path)


def test_create_task_accepts_the_edges_of_its_rules(make_task):
    earlier = make_task()
    task = services.create_task(
        user_message(reference_task_ids=[earlier.id], metadata={"n": LARGEST}),
        actor=CLIENT,
        skill="ci-wait",
        context_id="c" * 128,
        metadata={"deep": nested(63)},
        origin=services.Origin("acp", ref="session-1", title="t" * 200),
    )
    task.refresh_from_db()
    assert (task.skill, task.context_id, task.origin) == ("ci-wait", "c" * 128, "acp")
    assert task.origin_title == "t" * 200 and task.metadata == {"deep": nested(63)}
    first = task.messages.get()
    assert first.reference_task_ids == [earlier.id] and first.metadata == {"n": LARGEST}


# --- add_message, emit_text, report_progress -------------------------------------------------


@pytest.mark.parametrize(
    ("over", "path"),
    [
        pytest.param({"parts": text_part(NUL)}, "message.parts.0.text", id="nul-in-text"),
        pytest.param({"parts": []}, "message.parts", id="no-parts"),
        pytest.param({"role": "tool"}, "message.role", id="role"),
        pytest.param({"metadata": {"x": NUL}}, "message.metadata.x", id="metadata"),
        pytest.param({"reference_task_ids": [7]}, "message.referenceTaskIds.0", id="ref"),
    ],
)
@pytest.mark.parametrize("state", ["working", "input-required"])
def test_add_message_refuses_a_bad_message(make_task, refuses, state, over, path):
    task = make_task(state)
    refuses(lambda: services.add_message(task.id, msg(**over), actor=CLIENT), path)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param(" \n\t", id="blank"),
        pytest.param(NUL, id="nul"),
        pytest.param(LONE_SURROGATE, id="surrogate"),
        pytest.param(None, id="none"),
        pytest.param("x" * 200_001, id="too-long"),
    ],
)
def test_emit_text_refuses_bad_text(make_task, refuses, text):
    task = make_task("working")
    refuses(lambda: services.emit_text(task.id, text, actor=AGENT), "text")


def test_emit_text_needs_a_task_that_takes_output(make_task, refuses):
    task = make_task("submitted")
    refuses(lambda: services.emit_text(task.id, "hi", actor=AGENT), "", error=NotAllowedNow)


@pytest.mark.parametrize(
    ("done", "total"),
    [(4, 3), (0, 0), (-1, 3), (1, -1), (True, 3), (1, True), (1.5, 3), (1, "3"), (None, 3)],
)
def test_report_progress_refuses_impossible_counts(make_task, refuses, done, total):
    task = make_task("working")
    refuses(lambda: services.report_progress(task.id, done, total, actor=AGENT), "progress")


@pytest.mark.parametrize(
    ("plan", "path"),
    [
        pytest.param("read", "plan", id="not-a-list"),
        pytest.param(["read"], "plan.0", id="entry-not-object"),
        pytest.param(
            [{"content": 1, "priority": "high", "status": "pending"}],
            "plan.0.content",
            id="content-not-text",
        ),
        pytest.param(
            [{"content": "x", "priority": "urgent", "status": "pending"}],
            "plan.0.priority",
            id="unknown-priority",
        ),
        pytest.param(
            [{"content": "x", "priority": "high", "status": "done"}],
            "plan.0.status",
            id="unknown-status",
        ),
    ],
)
def test_report_progress_refuses_a_bad_plan(make_task, refuses, plan, path):
    task = make_task("working")
    refuses(lambda: services.report_progress(task.id, 0, 1, actor=AGENT, plan=plan), path)


def test_report_progress_keeps_a_plan_on_its_event(make_task):
    task = make_task("working")
    plan = [{"content": "read", "priority": "high", "status": "completed"},
            {"content": "sum up", "priority": "low", "status": "pending"}]  # fmt: skip
    services.report_progress(task.id, 1, 2, actor=AGENT, plan=plan)
    task.refresh_from_db()
    assert task.progress == {"done": 1, "total": 2}
    assert task.events.order_by("-id").first().data == {"done": 1, "total": 2, "plan": plan}


@pytest.mark.parametrize(("done", "total"), [(0, 1), (3, 3)])
def test_report_progress_accepts_the_edges(make_task, done, total):
    task = make_task("working")
    services.report_progress(task.id, done, total, actor=AGENT)
    assert Task.objects.get(pk=task.id).progress == {"done": done, "total": total}


def test_report_progress_needs_a_task_that_takes_output(make_task, refuses):
    task = make_task("input-required")
    call = lambda: services.report_progress(task.id, 1, 2, actor=AGENT)  # noqa: E731
    refuses(call, "", error=NotAllowedNow)


# --- reasons of fail / reject / cancel -------------------------------------------------------

ENDINGS = {
    "fail": ("working", lambda t, **kw: services.fail_task(t, actor=AGENT, **kw)),
    "reject": ("submitted", lambda t, **kw: services.reject_task(t, actor=AGENT, **kw)),
    "cancel": ("working", lambda t, **kw: services.cancel_task(t, actor=CLIENT, **kw)),
}


def _ending_cases():
    for name in ENDINGS:
        yield pytest.param(name, "x" * 2001, id=f"{name}-too-long")
        yield pytest.param(name, NUL, id=f"{name}-nul")
        yield pytest.param(name, 42, id=f"{name}-not-a-string")


@pytest.mark.parametrize(("ending", "reason"), list(_ending_cases()))
def test_ending_reasons_are_checked(make_task, refuses, ending, reason):
    state, end = ENDINGS[ending]
    task = make_task(state)
    refuses(lambda: end(task.id, reason=reason), "reason")


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_ending_reason_of_exactly_2000_characters_is_kept(make_task, ending):
    state, end = ENDINGS[ending]
    task = make_task(state)
    end(task.id, reason="r" * 2000)
    assert Task.objects.get(pk=task.id).state != state
    assert task.events.order_by("id").last().reason == "r" * 2000


def test_fail_text_is_checked(make_task, refuses):
    task = make_task("working")
    call = lambda: services.fail_task(task.id, actor=AGENT, reason="boom", text=NUL)  # noqa: E731
    refuses(call, "text")


# --- add_artifact ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"parts": []}, "parts", id="no-parts"),
        pytest.param({"parts": text_part(NUL)}, "parts.0.text", id="nul-in-part"),
        pytest.param({"parts": [{"kind": "data", "data": "x"}]}, "parts.0.data", id="data"),
        pytest.param({"name": "n" * 201}, "name", id="long-name"),
        pytest.param({"name": NUL}, "name", id="nul-name"),
        pytest.param({"description": "d" * 20_001}, "description", id="long-description"),
        pytest.param({"metadata": {"x": NUL}}, "metadata.x", id="nul-in-metadata"),
        pytest.param({"metadata": [1]}, "metadata", id="metadata-not-object"),
        pytest.param({"artifact_id": ""}, "artifactId", id="blank-id"),
        pytest.param({"artifact_id": "a" * 129}, "artifactId", id="long-id"),
    ],
)
def test_add_artifact_refuses_bad_values(make_task, refuses, kwargs, path):
    task = make_task("working")
    kwargs = {"parts": text_part("report"), **kwargs}
    refuses(lambda: services.add_artifact(task.id, actor=AGENT, **kwargs), path)


def test_add_artifact_refuses_an_existing_id_without_append(make_task, refuses):
    task = make_task("working")
    services.add_artifact(task.id, actor=AGENT, parts=text_part("v1"), artifact_id="report")
    call = lambda: services.add_artifact(  # noqa: E731
        task.id, actor=AGENT, parts=text_part("v2"), artifact_id="report"
    )
    refuses(call, "", error=NotAllowedNow)
    assert Artifact.objects.get(task=task).parts == text_part("v1")


def test_add_artifact_accepts_the_edges(make_task):
    task = make_task("working")
    art = services.add_artifact(
        task.id,
        actor=AGENT,
        parts=text_part("r"),
        name="n" * 200,
        description="d" * 20_000,
        artifact_id="a" * 128,
    )
    art.refresh_from_db()
    assert (len(art.name), len(art.description), art.artifact_id) == (200, 20_000, "a" * 128)


# --- pause_task ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"reason": "x" * 2001}, "reason", id="long-reason"),
        pytest.param({"reason": NUL}, "reason", id="nul-reason"),
        pytest.param({"reason": None}, "reason", id="reason-none"),
        pytest.param({"mode": "right_now"}, "mode", id="unknown-mode"),
        pytest.param({"mode": ""}, "mode", id="blank-mode"),
        pytest.param({"mode": None}, "mode", id="no-mode"),
        pytest.param(
            {"resume_when": {"timeout": {"durationMinutes": 0}}},
            "resumeWhen.timeout.durationMinutes",
            id="zero-duration",
        ),
        pytest.param(
            {"resume_when": {"timeout": {"durationMinutes": "30"}}},
            "resumeWhen.timeout.durationMinutes",
            id="duration-as-string",
        ),
        pytest.param(
            {"resume_when": {"timeout": {"durationMinutes": 5, "onTimeout": "explode"}}},
            "resumeWhen.timeout.onTimeout",
            id="unknown-on-timeout",
        ),
        pytest.param(
            {"resume_when": {"onEvent": "ci done"}}, "resumeWhen.onEvent", id="event-with-space"
        ),
        pytest.param({"resume_when": {"until": "noon"}}, "resumeWhen.until", id="unknown-key"),
        pytest.param({"resume_when": "in an hour"}, "resumeWhen", id="not-an-object"),
        pytest.param(
            {"resume_when": {"trigger": {"event": "deploy", "match": {"env": NUL}}}},
            "resumeWhen.trigger.match.env",
            id="nul-in-conditions",
        ),
        pytest.param(
            {"resume_when": {"timeout": {"durationMinutes": float("inf")}}},
            "resumeWhen.timeout.durationMinutes",
            id="inf-duration",
        ),
        pytest.param({"metadata": {"x": NUL}}, "metadata.x", id="nul-in-metadata"),
        pytest.param({"metadata": {"n": -TOO_BIG}}, "metadata.n", id="huge-int-in-metadata"),
        pytest.param({"metadata": TOO_DEEP}, f"metadata.{TOO_DEEP_PATH}", id="deep-metadata"),
        pytest.param({"metadata": "x"}, "metadata", id="metadata-not-object"),
    ],
)
def test_pause_task_refuses_bad_values(make_task, refuses, kwargs, path):
    task = make_task("working")
    refuses(lambda: services.pause_task(task.id, actor=CLIENT, **kwargs), path)


def test_pause_stores_a_resume_when_dict_as_canonical_conditions(make_task):
    task = make_task("working")
    susp = services.pause_task(
        task.id,
        actor=CLIENT,
        reason="r" * 2000,
        mode="interrupt_immediate",
        resume_when={"onEvent": "deploy.done", "timeout": {"durationMinutes": 30}},
        metadata={"deep": nested(63)},
    ).suspension
    susp.refresh_from_db()
    assert susp.conditions == {
        "onEvent": "deploy.done",
        "timeout": {"durationMinutes": 30, "onTimeout": "fail"},
    }
    assert susp.on_event == "deploy.done" and susp.mode == "interrupt_immediate"
    assert susp.deadline == susp.suspended_at + timedelta(minutes=30)
    assert len(susp.reason) == 2000 and susp.metadata == {"deep": nested(63)}
    assert Task.objects.get(pk=task.id).state == "paused-by-client"


@pytest.mark.parametrize("mode", list(Suspension.Mode.values))
def test_pause_accepts_every_mode(make_task, mode):
    task = make_task("working")
    susp = services.pause_task(task.id, actor=CLIENT, mode=mode).suspension
    assert Suspension.objects.get(pk=susp.pk).mode == mode


# --- park_task -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"reason": ""}, "reason", id="empty-reason"),
        pytest.param({"reason": "  \n"}, "reason", id="blank-reason"),
        pytest.param({"reason": "x" * 2001}, "reason", id="long-reason"),
        pytest.param({"reason": NUL}, "reason", id="nul-reason"),
        pytest.param(
            {"conditions": {"timeout": {"durationMinutes": -5}}},
            "conditions.timeout.durationMinutes",
            id="negative-duration",
        ),
        pytest.param(
            {"conditions": {"timeout": {"durationMinutes": 5, "onTimeout": "resume_with_input"}}},
            "conditions.timeout.input",
            id="input-missing",
        ),
        pytest.param(
            {"conditions": {"trigger": {"match": {}}}}, "conditions.trigger.event", id="trigger"
        ),
        pytest.param({"conditions": ["ci.done"]}, "conditions", id="not-an-object"),
        pytest.param(
            {"conditions": {"onEvent": "ci.done", "timeout": {"durationMinutes": 5, "input": NUL}}},
            "conditions.timeout.input",
            id="nul-in-conditions",
        ),
        pytest.param({"summary": "s" * 20_001}, "summary", id="long-summary"),
        pytest.param({"summary": NUL}, "summary", id="nul-summary"),
        pytest.param({"metadata": {"x": NUL}}, "metadata.x", id="nul-in-metadata"),
    ],
)
def test_park_task_refuses_bad_values(make_task, refuses, kwargs, path):
    task = make_task("working")
    kwargs = {"reason": "waiting on ci", **kwargs}
    refuses(lambda: services.park_task(task.id, actor=AGENT, **kwargs), path)


def test_park_stores_conditions_dict_canonically_and_keeps_the_edges(make_task):
    task = make_task("working")
    susp = services.park_task(
        task.id,
        actor=AGENT,
        reason="r" * 2000,
        summary="s" * 20_000,
        conditions={
            "trigger": {"event": "deploy.finished"},
            "timeout": {"durationMinutes": 10, "onTimeout": "resume_with_input", "input": 1},
        },
    ).suspension
    susp.refresh_from_db()
    assert susp.conditions == {
        "trigger": {"event": "deploy.finished", "match": {}},
        "timeout": {"durationMinutes": 10, "onTimeout": "resume_with_input", "input": 1},
    }
    assert susp.trigger_event == "deploy.finished"
    assert (len(susp.reason), len(susp.summary)) == (2000, 20_000)
    assert Task.objects.get(pk=task.id).state == "paused-by-agent"


# --- resume_task -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"handle": 42}, "handle", id="handle-not-a-string"),
        pytest.param({"handle": "h" * 81}, "handle", id="long-handle"),
        pytest.param({"handle": NUL}, "handle", id="nul-handle"),
        pytest.param({"resume_input": {"x": NUL}}, "input.x", id="nul-in-input"),
        pytest.param({"resume_input": [1, float("nan")]}, "input.1", id="nan-in-input"),
        pytest.param({"resume_input": {"n": TOO_BIG}}, "input.n", id="huge-int-in-input"),
        pytest.param({"resume_input": LONE_SURROGATE}, "input", id="surrogate-input"),
        pytest.param({"resume_input": TOO_DEEP}, f"input.{TOO_DEEP_PATH}", id="deep-input"),
        pytest.param({"continue_transcript": "yes"}, "continueTranscript", id="transcript-str"),
        pytest.param({"continue_transcript": 1}, "continueTranscript", id="transcript-int"),
        pytest.param({"cause": "whim"}, "cause", id="unknown-cause"),
        pytest.param({"reason": "x" * 2001}, "reason", id="long-reason"),
        pytest.param({"reason": NUL}, "reason", id="nul-reason"),
    ],
)
@pytest.mark.parametrize("state", ["paused-by-client", "paused-by-agent"])
def test_resume_task_refuses_bad_values(make_task, refuses, state, kwargs, path):
    task = make_task(state)
    refuses(lambda: services.resume_task(task.id, actor=CLIENT, **kwargs), path)


def test_resume_keeps_the_largest_storable_input_and_a_2000_character_reason(make_task):
    task = make_task("paused-by-client")
    handle = task.current_suspension.handle
    services.resume_task(
        task.id,
        actor=CLIENT,
        handle=handle,
        resume_input={"n": LARGEST, "deep": nested(63)},
        continue_transcript=False,
        cause="condition_fired",
        reason="r" * 2000,
    )
    susp = Suspension.objects.get(handle=handle)
    assert susp.resume_input == {"n": LARGEST, "deep": nested(63)}
    assert (susp.continue_transcript, susp.cause) == (False, "condition_fired")
    assert Task.objects.get(pk=task.id).state == "working"


# --- request_input / provide_input -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        pytest.param({"explanation": None}, "explanation", id="no-explanation"),
        pytest.param({"explanation": NUL}, "explanation", id="nul-explanation"),
        pytest.param({"explanation": "e" * 200_001}, "explanation", id="long-explanation"),
        pytest.param({"request": ["decision"]}, "request", id="request-not-object"),
        pytest.param({"request": {"title": NUL}}, "request.title", id="nul-in-request"),
        pytest.param(
            {"request": {"fields": [{"name": "x", "type": "colour"}]}},
            "request.fields.0.type",
            id="bad-field-type",
        ),
        pytest.param(
            {"request": None},
            "request",
            id="request-none",
        ),
    ],
)
def test_request_input_refuses_bad_values(make_task, refuses, kwargs, path):
    task = make_task("working")
    kwargs = {"explanation": "Please approve", "request": {}, **kwargs}
    refuses(lambda: services.request_input(task.id, actor=AGENT, **kwargs), path)


def response(request_id: str, values: dict) -> list[dict]:
    data = {"type": "a2a.input.response", "requestId": request_id, "values": values}
    return [{"kind": "data", "data": data}]


ONE_APPROVAL = {"fields": [{"name": "decision", "type": "approval", "required": True}]}


@pytest.mark.parametrize(
    ("parts", "path"),
    [
        pytest.param(
            response("req-other", {"decision": "approve"}),
            "message.parts.0.data.requestId",
            id="wrong-request-id",
        ),
        pytest.param(
            response("req-1", {}), "message.parts.0.data.values.decision", id="required-missing"
        ),
        pytest.param(
            response("req-1", {"decision": "approve", "colour": "red"}),
            "message.parts.0.data.values.colour",
            id="unknown-value",
        ),
        pytest.param(
            text_part("maybe: later"), "message.parts.values.decision", id="text-not-a-decision"
        ),
        pytest.param(
            [{"kind": "data", "data": {"decision": "approve"}}],
            "message.parts",
            id="no-answer-at-all",
        ),
        pytest.param(text_part(NUL), "message.parts.0.text", id="nul-in-answer"),
    ],
)
def test_provide_input_refuses_bad_answers(make_task, refuses, parts, path):
    task = make_task("working")
    request = {"requestId": "req-1", **ONE_APPROVAL}
    services.request_input(task.id, actor=AGENT, explanation="Ship?", request=request)
    refuses(lambda: services.provide_input(task.id, msg(parts=parts), actor=CLIENT), path)
    assert Task.objects.get(pk=task.id).state == "input-required"


def test_provide_input_refuses_text_for_a_request_of_several_fields(make_task, refuses):
    task = make_task("input-required")  # conftest's APPROVAL_REQUEST: decision + note
    call = lambda: services.provide_input(  # noqa: E731
        task.id, msg(parts=text_part("approve")), actor=CLIENT
    )
    err = refuses(call, "message.parts")
    assert "2 fields" in err.errors["message.parts"][0]


def test_provide_input_needs_a_waiting_task(make_task, refuses):
    task = make_task("working")
    call = lambda: services.provide_input(task.id, msg(), actor=CLIENT)  # noqa: E731
    refuses(call, "", error=TransitionRefused)


def test_ask_again_replaces_the_open_request_and_an_answer_to_the_old_is_refused(
    make_task, refuses
):
    """A question whose asker is gone (a hosted agent's supervisor, killed) is withdrawn and
    asked again in one change; the old one's answer is refused, saying where to answer."""
    task = make_task("working")
    first = services.request_input(task.id, actor=AGENT, explanation="Ship?", request=ONE_APPROVAL)
    again = services.ask_again(task.id, actor=AGENT, withdrawn=first["requestId"])
    assert again["requestId"] != first["requestId"]
    assert {k: v for k, v in again.items() if k != "requestId"} == {
        k: v for k, v in first.items() if k != "requestId"
    }
    task.refresh_from_db()
    assert (task.state, task.input_request) == ("input-required", again)
    event = task.events.order_by("-id").first()
    assert (event.kind, event.reason) == ("input_requested", "Ship?")
    assert event.data["withdrawnRequestId"] == first["requestId"]
    stale = msg(parts=response(first["requestId"], {"decision": "approve"}))
    err = refuses(
        lambda: services.provide_input(task.id, stale, actor=CLIENT),
        "message.parts.0.data.requestId",
    )
    assert "withdrawn" in str(err.errors) and again["requestId"] in str(err.errors)
    fresh = msg(parts=response(again["requestId"], {"decision": "approve"}))
    services.provide_input(task.id, fresh, actor=CLIENT)
    assert Task.objects.get(pk=task.id).state == "working"


def test_ask_again_needs_the_named_request_open(make_task, refuses):
    task = make_task("working")
    first = services.request_input(task.id, actor=AGENT, explanation="Ship?", request=ONE_APPROVAL)
    call = lambda: services.ask_again(task.id, actor=AGENT, withdrawn="req-other")  # noqa: E731
    refuses(call, "", error=NotAllowedNow)
    services.provide_input(
        task.id, msg(parts=response(first["requestId"], {"decision": "reject"})), actor=CLIENT
    )
    call = lambda: services.ask_again(task.id, actor=AGENT, withdrawn=first["requestId"])  # noqa: E731
    refuses(call, "", error=NotAllowedNow)  # answered meanwhile: nothing to ask again


# --- emit_event ------------------------------------------------------------------------------


@pytest.fixture
def parked_on_ci(make_task) -> Task:
    task = make_task("working")
    services.park_task(task.id, actor=AGENT, reason="ci", conditions={"onEvent": "ci.done"})
    return task


@pytest.mark.parametrize(
    ("name", "payload", "path"),
    [
        pytest.param("", {}, "name", id="empty-name"),
        pytest.param("   ", {}, "name", id="blank-name"),
        pytest.param("ci done", {}, "name", id="space-in-name"),
        pytest.param("ci.done\n", {}, "name", id="newline-in-name"),
        pytest.param("e" * 201, {}, "name", id="long-name"),
        pytest.param("ci.done\x00", {}, "name", id="nul-name"),
        pytest.param(None, {}, "name", id="no-name"),
        pytest.param("ci.done", ["ok"], "payload", id="payload-not-object"),
        pytest.param("ci.done", {"log": NUL}, "payload.log", id="nul-in-payload"),
        pytest.param("ci.done", {"t": float("-inf")}, "payload.t", id="inf-in-payload"),
        pytest.param("ci.done", {"n": TOO_BIG}, "payload.n", id="huge-int-in-payload"),
        pytest.param("ci.done", TOO_DEEP, f"payload.{TOO_DEEP_PATH}", id="deep-payload"),
    ],
)
def test_emit_event_refuses_bad_values(parked_on_ci, refuses, name, payload, path):
    events_before = ExternalEvent.objects.count()
    refuses(lambda: services.emit_event(name, payload, actor=CLIENT), path)
    assert ExternalEvent.objects.count() == events_before
    assert Task.objects.get(pk=parked_on_ci.id).state == "paused-by-agent"


def test_emit_event_accepts_a_200_character_name_and_wakes_its_sleeper(make_task):
    name = "e" * 200
    task = make_task("working")
    services.park_task(task.id, actor=AGENT, reason="wait", conditions={"onEvent": name})
    event = services.emit_event(name, {"n": LARGEST}, actor=CLIENT)
    assert event.woke == [
        {"taskId": task.id, "handle": event.woke[0]["handle"], "cause": "external_event"}
    ]
    assert Task.objects.get(pk=task.id).state == "working"
    assert ExternalEvent.objects.get(pk=event.pk).payload == {"n": LARGEST}
