"""History (issue 29, item 2): every task of any age is found by a server-side search
over its title, ids, agent, state, door, who acted, reasons and messages' text, a page at
a time (keyset links), on both databases' own full-text indexes; the search lives in the
URL; bad input is answered, never a 500."""

from __future__ import annotations

import html as htmllib
import importlib
import re

import pytest
from django.db import connection

from a2a import services
from a2a.models import Task
from agui import search
from agui.models import SearchDoc, ViewTask
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def found(client, **params) -> list[str]:
    """The task ids the history page lists for these parameters, in order."""
    r = client.get("/history", params)
    assert r.status_code == 200, r.content[:300]
    return re.findall(r'<code class="task-ids">([^<]+)</code>', r.content.decode())


def rejected(text: str, reason: str) -> Task:
    task = services.create_task(user_message(text), actor=CLIENT, skill="batch")
    services.reject_task(task.id, actor=AGENT, reason=reason, text="Not mine.")
    return task


def test_a_finished_task_is_found_by_any_of_its_words_ids_and_people(op, make_task):
    old = rejected("Render the quarterly report for region 7", "out of budget for Q3")
    ViewTask.objects.filter(task_id=old.id).update(in_view=False)  # gone from the board
    other = make_task("working", text="Deploy release 2.14")
    assert found(op, q="quarterly") == [old.id]
    assert found(op, q="quart") == [old.id]  # a word's start
    assert found(op, q="budget Q3") == [old.id]  # the reject reason, every word
    assert found(op, q="region budget") == [old.id]  # words from two fields
    assert found(op, q="Not mine") == [old.id]  # the agent's message
    assert found(op, q=old.id) == [old.id]  # the whole id, dashes and all
    assert found(op, q=old.id[:8]) == [old.id]  # the short id the audit shows
    assert found(op, q=old.context_id) == [old.id]
    assert found(op, q="2.14") == [other.id]  # as written, on both databases
    assert found(op, q="rejected") == [old.id]  # its state
    assert found(op, q='"quarterly report"') == [old.id]
    assert found(op, q='"report quarterly"') == []  # a phrase keeps its order
    assert found(op, q="quarterly deploy") == []  # every word must match
    assert found(op, who="agent") == [other.id, old.id]
    assert found(op, who="client:test") == [other.id, old.id]  # who made them
    assert found(op, who="test-agent") == [other.id, old.id]
    assert found(op, state="finished") == [old.id]
    assert found(op, state="open") == [other.id]
    assert found(op, state="rejected", q="report") == [old.id]
    assert found(op, skill="batch") == [old.id]
    assert found(op, context=other.context_id) == [other.id]
    assert found(op) == [other.id, old.id]  # no search: every task, newest change first


def test_who_acted_and_a_change_moves_a_task_up(op, make_task):
    first = make_task("working", text="first job")
    second = make_task("working", text="second job")
    assert found(op, q="job") == [second.id, first.id]
    before = SearchDoc.objects.get(task_id=first.id).id
    services.report_progress(first.id, 1, 10, actor=AGENT)  # nothing searched changed
    assert SearchDoc.objects.get(task_id=first.id).id == before
    assert found(op, q="job") == [second.id, first.id]
    services.pause_task(first.id, actor=services.Actor("operator", "ana"), reason="freeze")
    assert found(op, q="job") == [first.id, second.id]  # its change is the newest
    assert found(op, who="ana") == [first.id]
    assert found(op, who="operator:ana") == [first.id]
    assert found(op, who="freeze") == []  # a reason is not a person
    assert found(op, q="freeze") == [first.id]
    assert found(op, state="paused") == [first.id]


def test_pages_are_keyset_links_that_keep_the_search(op, make_task, monkeypatch):
    monkeypatch.setattr(search, "PAGE", 2)
    made = [make_task("completed", text=f"nightly build {i}").id for i in range(5)]
    newest_first = made[::-1]
    page = op.get("/history", {"q": "nightly", "state": "completed"}).content.decode()
    assert re.findall(r'<code class="task-ids">([^<]+)</code>', page) == newest_first[:2]
    assert "5 tasks match" in page
    seen = list(newest_first[:2])
    while m := re.search(r'href="([^"]+)" rel="next"', page):
        link = htmllib.unescape(m[1])
        assert "q=nightly" in link and "state=completed" in link  # the search is kept
        page = op.get(link).content.decode()
        seen += re.findall(r'<code class="task-ids">([^<]+)</code>', page)
    assert seen == newest_first
    # and back: the newer page of the last one is the one before it
    back = htmllib.unescape(re.search(r'href="([^"]+)" rel="prev"', page)[1])
    assert (
        found(op, **dict(p.split("=") for p in back.split("?")[1].split("&")))
        == (newest_first[2:4])
    )
    # the form shows the search it was given (a saved link opens the same search)
    assert 'name="q" id="h-q" value="nightly"' in page
    assert '<option value="completed" selected>' in page


@pytest.mark.parametrize("cursor", ["after=abc", "before=-1", "after=99999999999999999999"])
def test_a_page_link_this_page_did_not_make_answers_the_first_page(op, make_task, cursor):
    task = make_task("completed", text="kept")
    r = op.get(f"/history?q=kept&{cursor}")
    assert r.status_code == 400
    body = r.content.decode()
    assert "not one this page made" in body and task.id in body


@pytest.mark.parametrize(
    "q",
    ['"', "'", "\\", "NEAR(a b)", "a*", "who:x", "a AND OR NOT", "^", "-", ":*", "a & b | !c",
     "'); DROP TABLE a2a_task; --", "\x00", "x" * 500, "é", "* * *", '"unclosed', "(", "a:b:c"],
)  # fmt: skip
def test_any_text_is_a_search_never_an_error(op, make_task, q):
    make_task("completed", text="a b c")
    r = op.get("/history", {"q": q, "who": q})
    assert r.status_code == 200
    fields = ("who", "state", "skill", "origin", "context")
    r = op.get("/history", {"q": "a", **dict.fromkeys(fields, q)})  # filters with words too
    assert r.status_code == 200
    assert Task.objects.count() == 1


def test_agent_text_is_escaped(op):
    task = services.create_task(
        user_message("<script>alert(1)</script> report"), actor=CLIENT, skill="batch"
    )
    services.start_task(task.id, actor=AGENT)
    services.complete_task(task.id, actor=AGENT, text="<img src=x onerror=alert(2)>")
    body = op.get("/history", {"q": "report"}).content.decode()
    assert "<script>alert(1)" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; report" in body


def test_viewers_search_too_and_strangers_sign_in_first(view_only, client, make_task):
    task = make_task("completed", text="visible to viewers")
    assert found(view_only, q="viewers") == [task.id]
    r = client.get("/history", {"q": "viewers"})
    assert r.status_code == 302 and r["Location"].startswith("/login")


def test_the_migration_backfills_every_task_in_sql(op, make_task):
    """Tasks from before the search documents existed get one from the migration's SQL."""
    old = services.create_task(
        user_message("Archive the 2019 invoices"), actor=CLIENT, skill="batch"
    )
    services.add_message(old.id, user_message("please keep the receipts"), actor=CLIENT)
    services.reject_task(old.id, actor=AGENT, reason="nobody owns them")
    working = make_task("working", text="Resize the thumbnails")
    SearchDoc.objects.all().delete()
    assert found(op) == []
    migration = importlib.import_module("agui.migrations.0007_search_doc")
    sql = migration.PG_BACKFILL if connection.vendor == "postgresql" else migration.SQLITE_BACKFILL
    with connection.cursor() as cursor:
        cursor.execute(sql)
    assert found(op, q="invoices 2019") == [old.id]
    assert found(op, q="receipts") == [old.id]  # every message's text
    assert found(op, q="nobody owns") == [old.id]  # reasons
    assert found(op, q=old.id[:8]) == [old.id]
    assert found(op, who="agent") == [working.id, old.id]  # updated last: first
    assert found(op, state="finished") == [old.id]
    # and the projection carries on from the backfilled document
    services.complete_task(working.id, actor=AGENT, text="all resized")
    assert found(op, q="resized thumbnails") == [working.id]


def test_a_page_costs_two_statements(op, make_task):
    from django.test.utils import CaptureQueriesContext

    make_task("completed", text="counted")
    with CaptureQueriesContext(connection) as queries:
        search.search(search.Query(q="counted", state="finished", who="agent"))
    assert len(queries) == 2


def test_a_whole_id_finds_its_task_and_its_context_any_case(op, make_task):
    """A whole id is looked up in the id columns (agui/search.py `_where`): the task with
    that id, and every task of the context with that id. This id's start is a number to
    PostgreSQL's parser ("83179e3" then a word "d"), which a prefix search split."""
    context = "83179e3d-1031-45c1-9cfe-b1f3879ef0eb"
    first = services.create_task(
        user_message("Render the quarterly report"), actor=CLIENT, skill="batch",
        context_id=context,
    )  # fmt: skip
    second = services.create_task(
        user_message("and the yearly one"), actor=CLIENT, skill="batch", context_id=context
    )
    other = make_task("completed", text="quarterly too")
    assert found(op, q=first.id) == [first.id]
    assert found(op, q=first.id.upper()) == [first.id]
    assert found(op, q=context) == [second.id, first.id]
    assert found(op, q=context.upper()) == [second.id, first.id]
    assert found(op, q=f"{context} quarterly") == [first.id]  # and every other word
    assert found(op, q=f"{context} nosuchword") == []
    assert found(op, q=context, state="completed") == []
    assert found(op, q=context[:8]) == [second.id, first.id]  # its start: as a word
    assert found(op, q=other.id) == [other.id]
    assert found(op, q="00000000-0000-4000-8000-000000000000") == []


def test_a_word_with_a_state_counts_the_tasks_that_have_both_up_to_the_cap(
    op, make_task, monkeypatch
):
    for i in range(3):
        rejected(f"Scope check {i}", "out of scope")
    make_task("completed", text="scope of the release")
    make_task("working", text="scope creep")

    def summary(**params) -> str:
        page = op.get("/history", params).content.decode()
        return re.search(r'id="history-summary"[^>]*>([^<.·]+?) ?[·.]', page)[1]

    assert summary(q="scope", state="rejected") == "3 tasks match"
    assert summary(q="scope", state="finished") == "4 tasks match"
    assert summary(q="scope", state="open") == "1 task match"
    monkeypatch.setattr(search, "COUNT_CAP", 2)
    assert summary(q="scope", state="rejected") == "More than 2 tasks match"
    assert summary(q="scope", state="working") == "1 task match"
