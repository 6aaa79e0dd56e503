"""Reads for the dashboard pages (HackSoft's "selectors"), each in a constant number of
queries whatever the number of tasks or the length of a task's history."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from a2a.endings import Ending, endings
from a2a.errors import TaskNotFound, TransitionRefused, refusal_hint
from a2a.event_kinds import EventKind
from a2a.lifecycle import PAUSED, Action, State, move
from a2a.models import API_ACTIONS, Task, TaskEvent
from agui import search as task_search
from agui.models import PENDING, RESOLVED, Interrupt, ViewTask
from dashboard.models import AuditEntry
from dashboard.vocabulary import MODE_EFFECT, verb

FILTER_CHARS = 200  # longer is a paste accident; SQLite refuses LIKE patterns past 50 kB
PAUSED_STATES = [s.value for s in PAUSED]


# --- board filters (static/js/board.js applies the same rules in the browser) --------------


@dataclass(frozen=True)
class Filters:
    state: str = ""
    skill: str = ""
    context: str = ""
    q: str = ""
    origin: str = ""  # a Task.Origin value; any other value matches nothing, as for state

    @classmethod
    def from_query(cls, query) -> Filters:
        def get(key: str) -> str:
            return (query.get(key) or "").replace("\x00", "").strip()[:FILTER_CHARS]

        return cls(
            state=get("state"),
            skill=get("skill"),
            context=get("context"),
            q=get("q"),
            origin=get("origin"),
        )

    def as_query(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}

    def __bool__(self) -> bool:
        return any(vars(self).values())

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.as_query().items()]
        return ", ".join(parts) or "all tasks"


# The fields a board search looks in, with the words that name them (the bulk preview says
# which one matched). static/js/describe.js SEARCH_FIELDS lists the same, in the same order.
SEARCH_FIELDS: tuple[tuple[str, str], ...] = (
    ("title", "title"),
    ("statusText", "status"),
    ("pause.reason", "pause reason"),
    ("pause.requestedBy", "paused by"),
    ("skill", "agent"),
    ("taskId", "task id"),
    ("contextId", "context id"),
)


def _field_text(entry: dict[str, Any], path: str) -> str:
    head, _, tail = path.partition(".")
    value = (entry.get(head) or {}).get(tail) if tail else entry.get(head)
    return str(value).lower() if value else ""


_TERMS = re.compile(r'"([^"]*)"|([^\s"]+)')


def search_terms(q: str) -> list[str]:
    """The terms of a search: its words, and each "quoted phrase" as one term (matched as
    written, spaces included); an unclosed quote is ignored. static/js/describe.js's
    searchTerms is the same rule."""
    terms = (phrase or word for phrase, word in _TERMS.findall((q or "").lower()))
    return [t for t in (" ".join(t.split()) for t in terms) if t]


def search_match(entry: dict[str, Any], q: str) -> str | None:
    """The name of the first field holding every term of `q`, or None. All the terms must
    be in one field: "Judge batch" finds a task titled "Judge the batch run", not a `batch`
    agent's task whose pause reason mentions a judge (bulk "all matching the filter" acts
    on this rule, so a loose match would act on the wrong tasks); `"batch run"` (quoted)
    only a field with those words together. Blank `q`: "" (matches)."""
    terms = search_terms(q)
    if not terms:
        return ""
    for path, name in SEARCH_FIELDS:
        if in_one_field(terms, _field_text(entry, path)):
            return name
    return None


def in_one_field(terms: list[str], text: str) -> bool:
    """Are all the (lower-case) search `terms` in this one field's `text`? The rule of
    every search on the dashboard (board, bulk filter, inbox)."""
    text = " ".join(text.lower().split())  # a phrase matches across any run of spaces
    return bool(text) and all(term in text for term in terms)


def board_state(entry: dict[str, Any]) -> str:
    """The state a task is counted and filtered under: its status, but "rejected" for one
    that completed after its approval was rejected (its row reads "Completed · rejected";
    issue 29: the Rejected count read 0 beside such a row). describe.js boardState."""
    status = entry.get("status") or ""
    if status == State.COMPLETED and entry.get("lastDecision") == "rejected":
        return "rejected"
    return status


def entry_matches(entry: dict[str, Any], f: Filters) -> bool:
    status = entry.get("status")
    if f.state == "paused":
        if status not in PAUSED_STATES:
            return False
    elif f.state and board_state(entry) != f.state:
        return False
    if f.skill and entry.get("skill") != f.skill:
        return False
    if f.context and entry.get("contextId") != f.context:
        return False
    if f.origin and (entry.get("origin") or {}).get("door", "") != f.origin:
        return False
    return search_match(entry, f.q) is not None


def matching_entries(f: Filters) -> list[dict[str, Any]]:
    """View entries matching the filters, newest update first. One query."""
    qs: QuerySet = ViewTask.objects.order_by("-updated_at", "-task_id")
    if f.state == "paused":
        qs = qs.filter(status__in=PAUSED_STATES)
    elif f.state == State.REJECTED:  # and completed after a rejection (board_state)
        qs = qs.filter(status__in=[State.REJECTED, State.COMPLETED])
    elif f.state:
        qs = qs.filter(status=f.state)
    entries = qs.values_list("entry", flat=True)
    return [e for e in entries if entry_matches(e, f)]


# --- where a task came from (the task page; the board reads it from the view entry) ---


ORIGIN_REF = {Task.Origin.ACP: "session", Task.Origin.AGUI: "thread"}


@dataclass(frozen=True)
class Origin:
    """How the dashboard shows the door a task came in by. Blank `door`: not recorded."""

    task_id: str
    door: str
    ref: str = ""
    title: str = ""

    @property
    def label(self) -> str:  # "ACP session"
        return Task.Origin(self.door).label if self.door in Task.Origin.values else self.door

    @property
    def ref_noun(self) -> str:  # "session", "thread"
        return ORIGIN_REF.get(self.door, "reference")


def origin_of(task: Task) -> Origin:
    return Origin(task.id, task.origin, task.origin_ref, task.origin_title)


# --- bulk preview --------------------------------------------------------------------------

BULK_MOVES = {"pause": Action.PAUSE, "resume": Action.RESUME, "cancel": Action.CANCEL}


def skip_reason(action: str, state: str | None) -> str | None:
    """Why `action` would leave a task in `state` alone (None: it would act): the state
    machine the services check (they decide again when they act)."""
    try:
        m = move(state, BULK_MOVES[action])
    except TransitionRefused as exc:
        return refusal_hint(exc)
    return "already paused" if m.noop else None


def entries_for(task_ids: list[str]) -> list[dict[str, Any]]:
    found = dict(ViewTask.objects.filter(task_id__in=task_ids).values_list("task_id", "entry"))
    return [found[t] for t in task_ids if t in found]


# --- inbox ---------------------------------------------------------------------------------


@dataclass
class InboxItem:
    interrupt: Interrupt
    task: Task
    title: str
    # a withdrawn request's task's ending ("Canceled by operator:ana …": a2a.endings)
    ending: Ending | None = None

    @property
    def request(self) -> dict[str, Any]:
        return self.interrupt.content.get("request") or {}

    @property
    def fields(self) -> list[dict[str, Any]]:
        return list(self.request.get("fields") or [])

    @property
    def outcome(self) -> dict[str, Any]:
        """How a resolved request ended, for "Approved by operator:ana at 14:05: 'ship it'"."""
        c = self.interrupt.content or {}
        decision = c.get("decision")
        values = c.get("values") or {}
        quote = ""
        approval = next((f["name"] for f in self.fields if f.get("type") == "approval"), None)
        if approval and isinstance(values.get(approval), str):
            quote = values[approval].partition(": ")[2]
            others = {k: v for k, v in values.items() if k != approval}
        else:
            others = values
        verb = {"approved": "Approved", "rejected": "Rejected", "provided": "Answered"}.get(
            decision or "", "Withdrawn" if c.get("stage") == "withdrawn" else "Closed"
        )
        at = c.get("answeredAt")
        return {
            "verb": verb,
            "decision": decision or c.get("stage", ""),
            "by": c.get("answeredBy", ""),
            "at": datetime.fromisoformat(at.replace("Z", "+00:00")) if at else None,
            "quote": quote,
            "values": list(others.items()),
        }


INBOX_PAGE = 50  # pending requests a page shows, each with its context
INBOX_SCAN = 1000  # pending requests a search reads for one page, at most
INBOX_COUNT_CAP = 10_000  # "10,000+ waiting" beyond: a count that stays cheap


# What a resolved request's record reads: the request, and its task's id and skill
_RECORD_FIELDS = [f.name for f in Interrupt._meta.concrete_fields] + ["task__id", "task__skill"]


class BadCursor(ValueError):
    """An inbox page link this server did not make (or a mangled one)."""


@dataclass
class InboxPage:
    """One page of pending requests (oldest waiting first), the recently resolved, how
    many are waiting (`waiting`, exact up to INBOX_COUNT_CAP, then `waiting_more`) and
    the link to the next page (`next_cursor`: "" on the last)."""

    pending: list[InboxItem]
    resolved: list[InboxItem]
    waiting: int
    waiting_more: bool
    next_cursor: str
    searched_to_end: bool = True  # a search read every pending request after the cursor


def encode_cursor(i: Interrupt) -> str:
    raw = f"{i.created_at.isoformat()}|{i.interrupt_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """(created_at, interrupt_id) of the last request the previous page showed."""
    try:
        raw = base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()).decode()
        stamp, _, interrupt_id = raw.partition("|")
        at = datetime.fromisoformat(stamp)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadCursor(cursor) from None
    if not interrupt_id or at.tzinfo is None:
        raise BadCursor(cursor)
    return at, interrupt_id


def inbox(
    q: str = "", cursor: str = "", resolved_limit: int = 50, page_size: int | None = None
) -> InboxPage:
    """A page of pending input requests, oldest first (they have waited longest), after
    `cursor`, and the most recent resolved ones: the same few queries and rows at any
    number of requests — keyset pages on `interrupt_kind_pending` (kind, pending,
    created_at), a count that stops at INBOX_COUNT_CAP. A search (`q`: every word in one
    field, as on the board) reads on from the cursor, INBOX_SCAN requests at most, until
    a page is full; its next link goes on from the last request it read. BadCursor for a
    cursor this server did not make."""
    page_size = page_size or INBOX_PAGE
    base = Interrupt.objects.filter(kind=Interrupt.Kind.INPUT_REQUEST).select_related("task")
    waiting_qs = base.filter(PENDING).order_by("created_at", "interrupt_id")
    after = decode_cursor(cursor) if cursor else None
    page_qs = waiting_qs
    if after is not None:  # the range first, so the index seeks to it
        page_qs = page_qs.filter(created_at__gte=after[0]).filter(
            Q(created_at__gt=after[0]) | Q(created_at=after[0], interrupt_id__gt=after[1])
        )
    terms = search_terms(q) if q else []
    scan = INBOX_SCAN if terms else page_size
    read = list(page_qs[: scan + 1])
    more = len(read) > scan
    read = read[:scan]
    # cut in the query: every request ever answered is resolved (it read them all, then
    # kept a hundred). A record shows its task's id and skill only, so the rest of the
    # task's row (metadata, request, progress: JSON decoded per row) is not read; and a
    # search reads twice the list, to have some left after its filter.
    resolved = base.filter(RESOLVED).order_by("-resolved_at", "-interrupt_id")
    resolved = resolved.only(*_RECORD_FIELDS)
    resolved = list(resolved[: resolved_limit * 2 if terms else resolved_limit])
    ids = {i.task_id for i in read + resolved}
    titles = dict(ViewTask.objects.filter(task_id__in=ids).values_list("task_id", "entry__title"))

    def item(i: Interrupt) -> InboxItem:
        return InboxItem(i, i.task, titles.get(i.task_id) or "")

    items_p = [item(i) for i in read]
    items_r = [item(i) for i in resolved]
    last = read[-1] if read else None
    if terms:

        def hit(it: InboxItem) -> bool:
            fields = (
                it.task.id,
                it.title,
                it.task.skill,
                str(it.request.get("title", "")),
                str(it.interrupt.content.get("explanation", "")),
            )
            return any(in_one_field(terms, text) for text in fields)

        hits = []
        for it in items_p:
            if len(hits) == page_size:
                more, last = True, hits[-1].interrupt
                break
            if hit(it):
                hits.append(it)
        items_p = hits
        items_r = [i for i in items_r if hit(i)]
    withdrawn = [i for i in items_r if (i.interrupt.content or {}).get("stage") == "withdrawn"]
    ended = endings([i.task.id for i in withdrawn])  # one query for the page
    for i in withdrawn:
        i.ending = ended.get(i.task.id)
    # only indexed columns: an index-only scan of `interrupt_kind_pending`
    counted = Interrupt.objects.filter(PENDING, kind=Interrupt.Kind.INPUT_REQUEST)
    waiting = counted.order_by().values("created_at")[:INBOX_COUNT_CAP].count()
    return InboxPage(
        pending=items_p,
        resolved=items_r[:resolved_limit],
        waiting=waiting,
        waiting_more=waiting >= INBOX_COUNT_CAP,
        next_cursor=encode_cursor(last) if more and last is not None else "",
        searched_to_end=not (terms and more and len(items_p) < page_size),
    )


def task_title(task_id: str) -> str:
    """The title the board and the inbox list show for a task (its view entry's), so an
    answer card reads the same on the inbox, the task page and the demo, before and after
    a refused answer. Blank when the task has no view entry yet (the card shows its id)."""
    title = ViewTask.objects.filter(task_id=task_id).values_list("entry__title", flat=True)
    return title.first() or ""


def titles_of(task_ids: list[str]) -> dict[str, str]:
    """`task_title` of each of these tasks, in one query."""
    rows = ViewTask.objects.filter(task_id__in=task_ids).values_list("task_id", "entry__title")
    return {task_id: title or "" for task_id, title in rows}


def pending_interrupt(interrupt_id: str) -> Interrupt | None:
    return (
        Interrupt.objects.filter(
            interrupt_id=interrupt_id, kind=Interrupt.Kind.INPUT_REQUEST, pending=True
        )
        .select_related("task")
        .first()
    )


# --- audit ---------------------------------------------------------------------------------


# Actions API clients take, read from the core's event log (the services write it for every
# door): the audit names them with the key as actor, no second write path needed. Agents'
# own parks, the scheduler's timeouts and dashboard users (audited by dashboard.actions,
# refusals included) are not here: a2a.models.API_ACTIONS says which events are (and its
# partial indexes hold exactly those).
API_EVENT_ACTIONS = {
    EventKind.PAUSED: "pause",
    EventKind.RESUMED: "resume",
    EventKind.CANCELED: "cancel",
    EventKind.INPUT_PROVIDED: "answer",
}
DECISION_PAST = {"approved": "Approved", "rejected": "Rejected", "provided": "Answered"}


@dataclass(frozen=True)
class AuditRow:
    """One line of /audit: an operator's request from the dashboard (an AuditEntry, refused
    ones included) or an API client's action (a TaskEvent, which exists only when the
    change was made)."""

    at: datetime
    who: str
    action: str
    task_id: str
    reason: str
    outcome: str
    detail: str
    via: str  # "dashboard" | "api"

    @classmethod
    def of_entry(cls, e: AuditEntry) -> AuditRow:
        return cls(e.at, e.who, e.action, e.task_id, e.reason, e.outcome, e.detail, "dashboard")

    @classmethod
    def of_event(cls, e: TaskEvent) -> AuditRow:
        action = API_EVENT_ACTIONS[EventKind(e.kind)]
        return cls(
            e.created_at, e.actor, action, e.task_id, e.reason, AuditEntry.Outcome.OK,
            api_detail(action, e.data or {}), "api",
        )  # fmt: skip


def api_detail(action: str, data: dict[str, Any]) -> str:
    """What an API client's action did, in the words the dashboard's own entries use."""
    if action == "answer":
        said = DECISION_PAST.get(str(data.get("decision", "")), "Answered")
        text = f"{said} request {data.get('requestId') or ''}".rstrip()
    else:
        text = verb(action).past.capitalize()
    if action == "pause":
        text += ". " + MODE_EFFECT.get(str(data.get("mode", "")), "")
        if data.get("deadline"):
            text += f" Deadline {data['deadline']}."
    elif action == "resume" and data.get("hadResumeInput"):
        text += " with input"
    elif action == "cancel" and data.get("withdrawnRequestId"):
        text += f"; request {data['withdrawnRequestId']} withdrawn"
    return text.strip() + " (through the API)"


def _api_events(f: dict[str, str]):
    """API clients' actions matching the audit filters (a queryset); they always went
    through."""
    kinds = [k for k, a in API_EVENT_ACTIONS.items() if not f["action"] or a == f["action"]]
    if not kinds or f["outcome"] == AuditEntry.Outcome.REFUSED:
        return TaskEvent.objects.none()
    # API_ACTIONS as it is, so the database sees its partial indexes' very predicate
    qs = TaskEvent.objects.filter(API_ACTIONS)
    if len(kinds) < len(API_EVENT_ACTIONS):
        qs = qs.filter(kind__in=kinds)
    if f["who"]:
        qs = qs.filter(actor__icontains=f["who"])
    if f["task"]:
        qs = qs.filter(task_id=f["task"])
    if f["q"]:
        qs = qs.filter(reason__icontains=f["q"])
    return qs


# The audit's sort orders: key -> (AuditEntry ordering, TaskEvent ordering, merge key,
# reversed). "who" sorts case-blind, each name's lines newest first. (The database's
# collation may order punctuation apart from Python's: a page boundary inside one name
# could then differ by a line; times and the default order are exact.)
AUDIT_SORTS = {
    "-at": (("-at", "-id"), ("-created_at", "-id"), lambda r: r.at, True),
    "at": (("at", "id"), ("created_at", "id"), lambda r: r.at, False),
    "who": ((Lower("who"), "-at"), (Lower("actor"), "-created_at"),
            lambda r: (r.who.lower(), -r.at.timestamp()), False),
    "-who": ((Lower("who").desc(), "-at"), (Lower("actor").desc(), "-created_at"),
             lambda r: (r.who.lower(), r.at.timestamp()), True),
}  # fmt: skip
AUDIT_PAGE = 100
AUDIT_DEPTH = 10_000  # the deepest row paging reaches; filters narrow past it
# The count reads on past the page asked for to the next multiple of this ("of 1,000+",
# "page 1 of 10+"), not to AUDIT_DEPTH: what a page costs stays what its own rows cost
# (the page reads `page * size` rows of each source anyway), however long the log.
AUDIT_COUNT_STEP = 1_000


@dataclass
class AuditPage:
    rows: list[AuditRow]
    filters: dict[str, str]
    sort: str
    page: int
    pages: int
    total: int  # how many match, counted up to the count's limit
    first: int  # the 1-based number of the page's first row (0 when empty)
    more: bool = False  # more than `total` match (the count stopped)


def audit_entries(query, size: int = AUDIT_PAGE) -> AuditPage:
    """One page of the audit: the dashboard's AuditEntry rows and API clients' actions
    from the event log, merged, sorted by `sort` (newest first by default, or by who),
    `size` a page. Four queries: the two counts and, from each source, the rows up to the
    page's end in that order (merged here; both sort the same way, so the page is exact)."""
    f = {
        k: (query.get(k) or "").replace("\x00", "").strip()[:FILTER_CHARS]
        for k in ("who", "action", "task", "outcome", "q")
    }
    sort = query.get("sort") if query.get("sort") in AUDIT_SORTS else "-at"
    entry_order, event_order, key, reverse = AUDIT_SORTS[sort]
    qs = AuditEntry.objects.all()
    if f["who"]:
        qs = qs.filter(who__icontains=f["who"])
    if f["action"]:
        qs = qs.filter(action=f["action"])
    if f["task"]:
        qs = qs.filter(task_id=f["task"]) | qs.filter(detail__contains=f["task"])
    if f["outcome"]:
        qs = qs.filter(outcome=f["outcome"])
    if f["q"]:
        qs = qs.filter(reason__icontains=f["q"]) | qs.filter(detail__icontains=f["q"])
    events = _api_events(f)
    try:
        wanted = max(1, int(query.get("page") or 1))
    except ValueError:
        wanted = 1
    # counted no further than AUDIT_COUNT_STEP past the page asked for and than paging
    # reaches (the event log grows without bound), in no order: TaskEvent's default order
    # by id would walk the whole log from its first row
    limit = min(AUDIT_DEPTH, (wanted * size // AUDIT_COUNT_STEP + 1) * AUDIT_COUNT_STEP)
    found = qs.order_by()[: limit + 1].count() + events.order_by()[: limit + 1].count()
    total = min(found, limit)
    pages = max(1, -(-total // size))
    page = min(wanted, pages)
    end = page * size
    rows = [AuditRow.of_entry(e) for e in qs.order_by(*entry_order)[:end]]
    rows += [AuditRow.of_event(e) for e in events.order_by(*event_order)[:end]]
    rows.sort(key=key, reverse=reverse)  # stable: ties keep each source's order
    shown = rows[end - size : end]
    first = end - size + 1 if shown else 0
    return AuditPage(shown, f, sort, page, pages, total, first, more=found > limit)


def get_task(task_id: str) -> Task:
    try:
        return Task.objects.select_related("current_suspension", "status_message").get(pk=task_id)
    except (Task.DoesNotExist, ValueError):
        raise TaskNotFound(task_id) from None


# --- history: search over every task, any age ------------------------------------------------

HISTORY_FILTERS = ("q", "who", "state", "skill", "origin", "context")


@dataclass
class HistoryPage:
    """One page of the history search (agui/search.py): the query as read from the URL
    (`filters`: what the form shows and every link keeps), the rows, the cursors of the
    older and newer pages, and how many match (capped)."""

    filters: dict[str, str]
    found: task_search.Page


def history(query) -> HistoryPage:
    """The history page's search from its URL: the filters (each cut to FILTER_CHARS) and
    a cursor, `after` (older than) or `before` (newer than) a document id. BadCursor for
    a cursor that is not one."""
    f = {
        k: (query.get(k) or "").replace("\x00", "").strip()[:FILTER_CHARS] for k in HISTORY_FILTERS
    }
    cursors = {}
    for key in ("after", "before"):
        raw = (query.get(key) or "").strip()
        if raw:
            if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
                raise BadCursor(raw)
            cursors[key] = int(raw)
    found = task_search.search(task_search.Query(**f), **cursors)
    return HistoryPage(f, found)
