"""Search over every task, of any age: the documents the projection keeps
(`agui.models.SearchDoc`, one per task) and the one query that reads them.

Why here: a search document is a projection of the task's committed log, like the view
entry, so the projection's pass writes it (agui.projection `_pass`, after the A2A writer's
commit): the writer pays nothing, a pass that dies leaves its due rows and the next pass
writes the document, and several changes of one task in one pass make one rewrite. A
document is rewritten only when something searched changed (a progress report changes
nothing here), by a DELETE and an INSERT of the pass's changed documents, so its `id`
grows with every change: "newest change first" is the primary key descending, keyset pages
are `id < last`, and SQLite's FTS5 index returns its rowids in that order by itself.

The full-text index is each database's own (migration agui 0007): PostgreSQL a stored
tsvector column with a GIN index, SQLite an FTS5 table kept by triggers. Both tokenize the
document and the terms of a query with the same tokenizer (the query's terms are handed to
it quoted, never split here), so a task id, a name or "2.14" match on each database as it
was written. Decisions: docs/dashboard.md, "History and search".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from a2a import selectors
from a2a.formats import text_of
from a2a.lifecycle import PAUSED, State
from a2a.models import Message, Task, TaskEvent
from a2a.prepared import Prepared, PreparedInsert, one_of
from agui import view
from agui.models import SearchDoc, ViewTask

BODY_CHARS = 32_000  # messages' text and reasons a document keeps (the first ones)
PART_CHARS = 8_000  # of one message or reason
WHO_CHARS = 2_000
PAGE = 50
COUNT_CAP = 1_000  # "1,000+ tasks match": a count that stays cheap at any size
TERM_CHARS = 200  # a longer term is a paste accident
MAX_TERMS = 12
# The state filter's groups, besides each state by itself.
GROUPS = {
    "paused": sorted(s.value for s in PAUSED),
    "finished": [s.value for s in view.FINISHED],
    "open": sorted(s.value for s in State if s.value not in view.FINISHED),
}


# --- writing: the projection's pass ------------------------------------------------------


_DOC = Prepared(lambda task: SearchDoc.objects.filter(task_id=task)[:1], "task")
_NEW_DOCS = PreparedInsert(SearchDoc)


def _actor_words(who: str, actors: list[str]) -> str:
    known = who.split()
    for actor in actors:
        if actor and actor not in known:
            known.append(actor)
    return " ".join(known)[:WHO_CHARS]


def index(plans: list[tuple[Task, ViewTask | None, list[TaskEvent]]], messages) -> None:
    """Bring the search documents of a pass's tasks up to date with their new events
    (`plans`: the pass's (task, view row before the pass, events)). `messages(task_id,
    seq)` is the pass's message lookup (agui.projector.Refs.message); messages it does
    not hold are read here, in one query. Rewrites only the documents that changed: one
    read, then one DELETE and one INSERT for the pass."""
    if not plans:
        return
    ids = [task.pk for task, _, _ in plans]
    if len(ids) == 1:  # the usual pass: a writer's own wake (compiled once)
        one = _DOC.first(task=ids[0])
        old = {one.task_id: one} if one is not None else {}
    else:
        old = {d.task_id: d for d in SearchDoc.objects.filter(task_id__in=ids)}
    wanted: dict[tuple[str, int], Message | None] = {}
    for task, _, events in plans:
        through = old[task.pk].through_seq if task.pk in old else 0
        for e in events:
            seq = (e.data or {}).get("messageSeq")
            if type(seq) is int and seq > through:
                wanted[(task.pk, seq)] = messages(task.pk, seq)
    missing = [k for k, m in wanted.items() if m is None]
    if missing:
        for msg in selectors.messages_of(missing):
            wanted[(msg.task_id, msg.seq)] = msg
    changed = []
    for task, current, events in plans:
        doc = document(task, current, events, old.get(task.pk), wanted)
        if doc is not None:
            changed.append(doc)
    if changed:  # statements compiled once: a pass writes documents for every change
        where, params = one_of("task_id", [d.task_id for d in changed])
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {SearchDoc._meta.db_table} WHERE {where}", params)
        _NEW_DOCS.insert_all(changed)


SEARCHED = ("state", "skill", "origin", "context_id", "title", "status", "who", "ids", "body")


def document(
    task: Task,
    current: ViewTask | None,
    events: list[TaskEvent],
    old: SearchDoc | None,
    messages: dict[tuple[str, int], Message | None],
) -> SearchDoc | None:
    """The task's new document, or None when nothing searched changed."""
    through = old.through_seq if old is not None else 0
    texts, last_seq = [], through
    for e in events:
        seq = (e.data or {}).get("messageSeq")
        if type(seq) is int and seq > last_seq:
            msg = messages.get((task.pk, seq))
            if msg is not None:
                texts.append(text_of(msg.parts)[:PART_CHARS])
            last_seq = seq
        if e.reason:
            texts.append(e.reason[:PART_CHARS])
    body = old.body if old is not None else task.origin_title
    for text in texts:
        if text and len(body) < BODY_CHARS:
            body = f"{body} {text}" if body else text
    title = (current.entry.get("title") if current is not None else None) or (
        old.title if old is not None else ""
    )
    if not title:
        first = messages.get((task.pk, 1))
        title = text_of(first.parts if first else None)[: view.TITLE_CHARS]
    status = text_of(task.status_message.parts if task.status_message else None)
    new = SearchDoc(
        task_id=task.pk,
        state=task.state,
        skill=task.skill,
        origin=task.origin,
        context_id=task.context_id,
        updated_at=task.updated_at,
        title=title[: view.TITLE_CHARS],
        status=status[: view.STATUS_TEXT_CHARS],
        who=_actor_words(old.who if old is not None else "", [e.actor for e in events]),
        ids=" ".join(x for x in (task.id, task.context_id, task.origin_ref) if x),
        body=body[:BODY_CHARS],
        through_seq=last_seq,
    )
    if old is not None and all(getattr(old, f) == getattr(new, f) for f in SEARCHED):
        return None  # (a message without text moves through_seq alone: nothing to search)
    return new


# --- reading: one page of a search ------------------------------------------------------

_TERMS = re.compile(r'"([^"]*)"|([^\s"]+)')
_UNSAFE = re.compile(r"['\"\\\x00]")  # quotes of either syntax, backslash, NUL
_WORD = re.compile(r"[^\W_]", re.UNICODE)
# a whole id as Taskdeck makes them (tasks, contexts: uuid4 strings)
_WHOLE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


@dataclass(frozen=True)
class Term:
    """One term of a query: a word (matched as a prefix of a word, from 2 characters) or a
    "quoted phrase" (its words together, in order, as written)."""

    text: str
    phrase: bool

    @property
    def whole_id(self) -> bool:
        """A whole task or context id (36 characters, dashes and all): searched in the
        id columns, not in the text (see `_where`)."""
        return not self.phrase and _WHOLE_ID.fullmatch(self.text) is not None

    @property
    def prefix(self) -> bool:
        last = re.findall(r"[^\W_]+", self.text)
        return not self.phrase and bool(last) and len(last[-1]) >= 2


def terms(q: str) -> list[Term]:
    """The terms of `q`: its words and "quoted phrases" (as the board's search reads
    them, dashboard.selectors.search_terms); a term without a letter or digit is left
    out (it would match nothing, or everything)."""
    out = []
    for phrase, word in _TERMS.findall(q or ""):
        text = " ".join(_UNSAFE.sub(" ", phrase or word).split())[:TERM_CHARS]
        if _WORD.search(text):
            out.append(Term(text, bool(phrase)))
    return out[:MAX_TERMS]


@dataclass(frozen=True)
class Query:
    """What to look for. Every part narrows: all the terms (each anywhere in the task's
    document), who acted (words of an actor, "operator:ana" or "ana"), the state (or a
    group: GROUPS), skill, origin door, context id."""

    q: str = ""
    who: str = ""
    state: str = ""
    skill: str = ""
    origin: str = ""
    context: str = ""

    def states(self) -> list[str]:
        return GROUPS.get(self.state, [self.state]) if self.state else []


@dataclass
class Page:
    docs: list[SearchDoc]
    older: int | None  # the cursor of the next (older) page, None on the last
    newer: int | None  # the cursor of the previous (newer) page, None on the first
    count: int  # how many match, up to COUNT_CAP
    count_more: bool  # more than COUNT_CAP match
    sql: list[str] = field(default_factory=list)  # the statements (bench --explain)


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _pg_tsquery(found: list[Term], who: list[Term]) -> str:
    """A to_tsquery text: each term a quoted string (PostgreSQL's parser splits it as it
    split the document), `:*` for a prefix, `A` for the who column only."""
    parts = []
    for t, weight in [(t, "") for t in found] + [(t, "A") for t in who]:
        suffix = ("*" if t.prefix else "") + weight
        parts.append(f"'{t.text}'" + (f":{suffix}" if suffix else ""))
    return " & ".join(parts)


def _fts5_filters(query: Query) -> list[str]:
    """The column filters as FTS5 column phrases (`state : ("working")`): a superset of
    the exact filter ("batch" is also in "batch-2"), which the SQL conditions then apply."""
    out = []
    for column, values in (("state", query.states()), ("skill", [query.skill]),
                           ("origin", [query.origin]), ("ids", [query.context])):  # fmt: skip
        values = [" ".join(_UNSAFE.sub(" ", v).split()) for v in values if v]
        values = [v for v in values if _WORD.search(v)]
        if values:
            out.append(f"{column} : (" + " OR ".join(f'"{v}"' for v in values) + ")")
    return out


def _fts5_match(found: list[Term], who: list[Term], filters: list[str] = ()) -> str:
    """An FTS5 MATCH text: each term a string (FTS5's tokenizer splits it), `*` for a
    prefix of its last word, `who :` for the who column only; then `filters`."""
    parts = [f'"{t.text}"' + ("*" if t.prefix else "") for t in found]
    parts += [f'who : "{t.text}"' + ("*" if t.prefix else "") for t in who]
    return " AND ".join([*parts, *filters])


COLUMNS = ", ".join(
    f"d.{c}"
    for c in ("id", "task_id", "state", "skill", "origin", "context_id", "updated_at", "title",
              "status", "who")
)  # fmt: skip


def _where(
    query: Query, found: list[Term], who: list[Term]
) -> tuple[str, list[str], list[Any], str]:
    """(the FROM clause, the WHERE conditions, their parameters, the ordering key) of a
    search: the full-text match, then the column filters."""
    conds, params = [], []
    table = "agui_searchdoc d"
    key = "d.id"
    # A whole id finds the task with that id and the tasks of the context with that id,
    # through the id columns' own indexes (a unique key, `searchdoc_context`): flat at any
    # size. As a word it was a prefix of the parser's pieces of it (PostgreSQL splits an
    # id as it reads it: "83179e3d-…" is a number, a word "d", more numbers…), a phrase
    # of six to nine prefixes to merge in the GIN index, some one or four characters
    # long: 16 ms at a million tasks, 150+ ms when a piece is one letter ("d":* is every
    # word that starts with d). What it leaves out: a text that quotes the whole id (a
    # message, a reason) and an origin reference (docs/dashboard.md, "History and search").
    for t in [t for t in found if t.whole_id]:
        conds.append("(d.task_id = %s OR d.context_id IN (%s, %s))")
        params += [t.text.lower(), t.text, t.text.lower()]
    found = [t for t in found if not t.whole_id]
    if found or who:
        if _postgres():
            conds.append("d.search @@ to_tsquery('simple'::regconfig, %s)")
            params.append(_pg_tsquery(found, who))
        else:
            # the FTS table drives: its rowids come out in order (newest change first)
            table = "agui_searchdoc_fts f JOIN agui_searchdoc d ON d.id = f.rowid"
            key = "f.rowid"
            # the filters go into the MATCH too, so FTS5 intersects their words with the
            # terms' (in rowid order) instead of joining every match to test them; the
            # exact column conditions below still decide
            conds.append("agui_searchdoc_fts MATCH %s")
            params.append(_fts5_match(found, who, _fts5_filters(query)))
    states = query.states()
    if len(states) == 1:
        conds.append("d.state = %s")
        params.append(states[0])
    elif states:
        conds.append(f"d.state IN ({', '.join(['%s'] * len(states))})")
        params += states
    for column, value in (("skill", query.skill), ("origin", query.origin),
                          ("context_id", query.context)):  # fmt: skip
        if value:
            conds.append(f"d.{column} = %s")
            params.append(value)
    return table, conds, params, key


def _planned_each_time(sql: str, params: list[Any]) -> tuple[str, list[Any] | None]:
    """(sql, params) to execute. On PostgreSQL the values are written into the SQL text
    (quoted by psycopg, as it would send them), so that no two searches share one
    statement. Why: with server-side binding (dashboard/settings.py, TASKDECK_PG_PREPARE)
    psycopg prepares a statement its connection ran five times, and PostgreSQL may then
    plan it once for any value (a generic plan). One plan cannot serve a word in every
    document and a word in none, a phrase and an id: at a million tasks the generic plans
    took a word every task holds 10 -> 180 ms, a phrase 9 -> 510 ms, who acted with a
    state 18 -> 470 ms (in process, the same calls repeated; docs/production.md, "Scale").
    Written out, each search is planned for its own words, as it was the first five
    times; the same search repeated is still prepared, and then its plan is its own."""
    if not _postgres():
        return sql, params
    from psycopg import sql as pgsql

    connection.ensure_connection()
    raw = connection.connection  # the psycopg connection
    text = pgsql.SQL(sql.replace("%s", "{}")).format(*(pgsql.Literal(p) for p in params))
    return text.as_string(raw), None


def search(query: Query, *, after: int | None = None, before: int | None = None,
           size: int | None = None) -> Page:  # fmt: skip
    """One page of the tasks matching `query`, newest change first: those older than the
    `after` cursor (the next page) or, with `before`, the page just newer than it. Two
    statements, whatever the number of tasks: a count that stops at COUNT_CAP, then the
    page (one row more than shown, to know whether there is another).

    Why the count comes first (PostgreSQL): with `ORDER BY id DESC LIMIT 51` the planner
    walks the primary key newest-first and tests each row when it expects many matches,
    which is right for a common word and ruinous for a rare one it misjudges (a prefix of
    a word it has no statistics for: an id's start, a word no task holds — 600 ms at
    200,000 documents, every row read). The count has no order, so the GIN index answers
    it; when it finds at most COUNT_CAP matches, the page reads those through the index
    first (a MATERIALIZED CTE, which the planner may not fold into the ordered walk) and
    sorts at most COUNT_CAP rows. Past COUNT_CAP the word is common enough for the walk."""
    size = size or PAGE
    found = terms(query.q)
    who = terms(query.who)
    table, conds, params, key = _where(query, found, who)
    where_all = f" WHERE {' AND '.join(conds)}" if conds else ""
    count_sql = f"SELECT count(*) FROM (SELECT 1 FROM {table}{where_all} LIMIT %s) AS hits"
    with connection.cursor() as cursor:
        cursor.execute(*_planned_each_time(count_sql, [*params, COUNT_CAP + 1]))
        (count,) = cursor.fetchone()
    page_conds, page_params = list(conds), list(params)
    if before is not None:
        page_conds.append(f"{key} > %s")
        page_params.append(before)
        order = "ASC"
    else:
        if after is not None:
            page_conds.append(f"{key} < %s")
            page_params.append(after)
        order = "DESC"
    where = f" WHERE {' AND '.join(page_conds)}" if page_conds else ""
    if _postgres() and (found or who) and count <= COUNT_CAP:
        sql = (
            f"WITH hits AS MATERIALIZED (SELECT {COLUMNS} FROM {table}{where}) "
            f"SELECT * FROM hits ORDER BY id {order} LIMIT %s"
        )
    else:
        sql = f"SELECT {COLUMNS} FROM {table}{where} ORDER BY {key} {order} LIMIT %s"
    docs = list(SearchDoc.objects.raw(*_planned_each_time(sql, [*page_params, size + 1])))
    more = len(docs) > size
    docs = docs[:size]
    if before is not None:
        docs.reverse()
        older = docs[-1].id if docs else None
        newer = docs[0].id if docs and more else None
    else:
        older = docs[-1].id if more else None
        newer = docs[0].id if docs and after is not None else None
    return Page(
        docs=docs,
        older=older,
        newer=newer,
        count=min(count, COUNT_CAP),
        count_more=count > COUNT_CAP,
        sql=[count_sql, sql],
    )
