"""What an editor renders (issue 30, item 3): each agent message is its own message
(messageId, closing line break for clients that ignore it), an artifact's appends update
one card, progress is a plan, the task's skill titles the session — every update valid
under the SDK's schema and of a standard kind, so a client that did not opt in knows it."""

from __future__ import annotations

from acp import schema as s

from a2a import services
from a2a.acp_door import updates
from tests.conftest import AGENT


def text_part(text: str) -> list[dict]:
    return [{"kind": "text", "text": text}]


STANDARD = {
    "agent_message_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "session_info_update",
}


def rendered(task) -> list[dict]:
    facts = updates.read_facts(task.context_id, {}, owner=task.owner)
    out = [u for f in facts for u in updates.render(f, replay=True, opted_in=False)]
    for u in out:  # each one as the SDK's client would parse it
        s.SessionNotification.model_validate({"sessionId": "sess-1", "update": u})
        assert u["sessionUpdate"] in STANDARD, u
    return out


def test_messages_are_separate_artifact_appends_one_card_progress_a_plan(make_task):
    task = make_task("working")
    services.report_progress(task.id, 1, 3, actor=AGENT)
    services.add_artifact(task.id, actor=AGENT, parts=text_part("item 0"), artifact_id="batch")
    for i in range(1, 20):
        services.add_artifact(
            task.id, actor=AGENT, parts=text_part(f"item {i}"), artifact_id="batch", append=True
        )
    services.fail_task(task.id, actor=AGENT, reason="rejected (no comment)")
    out = rendered(task)

    said = [u for u in out if u["sessionUpdate"] == "agent_message_chunk"]
    assert said and all(u["content"]["text"].endswith("\n") for u in said)
    ids = [u["messageId"] for u in said]
    assert len(set(ids)) == len(ids)  # one message per agent message, never glued
    assert "".join(u["content"]["text"] for u in said).endswith("Failed: rejected (no comment)\n")

    cards = {u["toolCallId"] for u in out if str(u.get("toolCallId", "")).startswith("artifact-")}
    assert len(cards) == 1  # twenty parts, one card
    opened = [u for u in out if u["sessionUpdate"] == "tool_call" and u["toolCallId"] in cards]
    assert len(opened) == 1
    last = [u for u in out if u.get("toolCallId") in cards][-1]
    shown = last["content"][0]["content"]["text"]
    assert shown.startswith("item 0") and shown.endswith("item 19")  # the artifact so far

    plan = next(u for u in out if u["sessionUpdate"] == "plan")
    assert [e["status"] for e in plan["entries"]] == ["completed", "in_progress", "pending"]
    titles = [
        u["title"] for u in out if u["sessionUpdate"] == "session_info_update" and "title" in u
    ]
    assert titles == ["Taskdeck: approval"]


def test_a_replay_renders_the_same_ids(make_task):
    task = make_task("working")
    services.complete_task(task.id, actor=AGENT, text="done")
    assert rendered(task) == rendered(task)


def test_a_task_deleted_while_its_events_are_read_is_skipped(make_task):
    """The events and their tasks are two statements: a task deleted between them (its
    events cascade) must leave the rest of the context to render, not raise KeyError —
    which ended a live session's follower (CI: a table flush between two tests while a
    door process still followed an earlier session)."""
    from django.db import connection

    from a2a.models import Task

    kept = make_task("working")
    gone = make_task("working", context_id=kept.context_id)
    deleted: list[str] = []

    def delete_before_the_tasks_are_read(execute, sql, params, many, context):
        if (
            not deleted
            and sql.lstrip().startswith("SELECT")
            and f'FROM "{Task._meta.db_table}"' in sql
        ):
            deleted.append(gone.id)
            Task.objects.filter(pk=gone.id).delete()
        return execute(sql, params, many, context)

    with connection.execute_wrapper(delete_before_the_tasks_are_read):
        facts = updates.read_facts(kept.context_id, {}, owner=kept.owner)
    assert deleted, "the delete did not happen during the read"
    assert facts and {f.task.id for f in facts} == {kept.id}
