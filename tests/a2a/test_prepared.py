"""Prepared reads (a2a/prepared.py) answer what the ORM answers, on both databases: the
same rows, fields, JSON, times and related objects, for GetTask's three reads and for a
reader who sees only their own tenant's tasks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections
from django.db.models import Prefetch
from django.test.utils import CaptureQueriesContext

from a2a import selectors, services
from a2a.errors import TaskNotFound
from a2a.models import Artifact, Message, Task
from a2a.prepared import Prepared, PreparedShapeError, PreparedTogether
from a2a.selectors import _recent_messages
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def _orm_view(task_id: str, history_length: int | None) -> selectors.TaskView:
    """GetTask's reads as the ORM makes them (prefetches), to compare with."""
    qs = Task.objects.select_related("current_suspension", "status_message").prefetch_related(
        Prefetch("artifacts", queryset=Artifact.objects.order_by("seq"), to_attr="_artifacts")
    )
    if history_length != 0:
        history = Prefetch("messages", _recent_messages(history_length), to_attr="_history")
        qs = qs.prefetch_related(history)
    task = qs.get(pk=task_id)
    return selectors.TaskView(
        task=task,
        history=list(getattr(task, "_history", [])),
        artifacts=list(task._artifacts),
    )


def _fields(obj) -> dict | None:
    if obj is None:
        return None
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.fixture(params=["paused", "completed"])
def busy_task(request, make_task) -> Task:
    """A task with messages, artifacts (JSON parts, metadata), either paused (an open
    suspension) or completed (the agent's status message)."""
    task = make_task("working")
    for i in range(5):
        services.add_message(task.id, user_message(f"more {i} \u00e9\u00e8"), actor=CLIENT)
    for i in range(3):
        services.add_artifact(
            task.id,
            actor=AGENT,
            parts=[{"kind": "data", "data": {"n": i, "nested": [1, {"x": None}]}}],
            name=f"a{i}",
            metadata={"k": [i]},
        )
    if request.param == "paused":
        services.pause_task(task.id, actor=CLIENT, reason="look")
    else:
        services.complete_task(task.id, actor=AGENT, text="done \u2713")
    return Task.objects.get(pk=task.id)


@pytest.mark.parametrize("history_length", [None, 0, 1, 3, 100])
def test_get_task_reads_what_the_orm_reads(busy_task, history_length):
    expected = _orm_view(busy_task.id, history_length)
    with CaptureQueriesContext(connection) as queries:
        got = selectors.get_task(busy_task.id, history_length=history_length)
    assert len(queries) == 1  # the task, its history and artifacts in one statement
    assert _fields(got.task) == _fields(expected.task)
    assert (got.task.current_suspension is None) == (got.task.state == "completed")
    assert (got.task.status_message is None) == (got.task.state != "completed")
    # select_related objects are there (no query), equal to the ORM's
    with CaptureQueriesContext(connection) as lazy:
        suspension, status = got.task.current_suspension, got.task.status_message
        tasks_of_rows = {row.task.pk for row in (*got.history, *got.artifacts)}
    assert len(lazy) == 0
    assert _fields(suspension) == _fields(expected.task.current_suspension)
    assert _fields(status) == _fields(expected.task.status_message)
    assert tasks_of_rows <= {busy_task.id}
    assert [_fields(m) for m in got.history] == [_fields(m) for m in expected.history]
    assert [_fields(a) for a in got.artifacts] == [_fields(a) for a in expected.artifacts]
    whole = 7 if got.task.state == "completed" else 6
    assert len(got.history) == (whole if history_length in (None, 100) else history_length)
    assert got.artifacts[2].parts == [
        {"kind": "data", "data": {"n": 2, "nested": [1, {"x": None}]}}
    ]


@pytest.mark.parametrize("history_length", [None, 0, 2])
def test_a_tenant_reader_sees_only_its_own_tasks(busy_task, history_length):
    from a2a.services import Actor

    Task.objects.filter(pk=busy_task.id).update(owner="tenant-a")
    own = Actor(kind="client", name="a", tenant="tenant-a", restricted=True)
    other = Actor(kind="client", name="b", tenant="tenant-b", restricted=True)
    mine = selectors.get_task(busy_task.id, history_length=history_length, visible_to=own)
    expected = _orm_view(busy_task.id, history_length)
    assert _fields(mine.task) == _fields(expected.task)
    assert [_fields(m) for m in mine.history] == [_fields(m) for m in expected.history]
    assert [_fields(a) for a in mine.artifacts] == [_fields(a) for a in expected.artifacts]
    # read in one statement, whose every part is the tenant's only
    with CaptureQueriesContext(connection) as queries, pytest.raises(TaskNotFound):
        selectors.get_task(busy_task.id, history_length=history_length, visible_to=other)
    assert len(queries) == 1
    assert queries[0]["sql"].count('"a2a_task"."owner" =') == (2 if history_length == 0 else 3)
    with pytest.raises(TaskNotFound):
        selectors.get_task(busy_task.id, visible_to=other)
    with pytest.raises(TaskNotFound):
        selectors.get_task("no-such-task")


def test_a_shape_whose_value_the_lookup_rewrites_is_refused(busy_task):
    """`__icontains` sends '%value%': a marker cannot be found, so nothing runs."""
    prepared = Prepared(lambda text: Message.objects.filter(parts__icontains=text), "text")
    with pytest.raises(PreparedShapeError, match="verbatim"):
        prepared.fetch(text="more")
    twice = Prepared(lambda id: Task.objects.filter(pk=id) | Task.objects.filter(pk=id), "id")
    with pytest.raises(PreparedShapeError):
        twice.fetch(id=busy_task.id)


def test_parts_read_together_answer_what_each_answers_alone(busy_task):
    """PreparedTogether: one statement, each part's answer as its own fetch gives it
    (model instances with their related objects, or rows); a row lock is refused."""
    from a2a.services._core import _LOCK

    seqs = Prepared(
        lambda task: (
            Message.objects.filter(task_id=task).order_by("seq").values_list("seq", "parts")
        ),
        "task",
    )
    parts = (selectors._TASK, seqs, selectors._ARTIFACTS)
    together = PreparedTogether(*parts)
    with CaptureQueriesContext(connection) as queries:
        task, rows, artifacts = together.fetch(id=busy_task.id, task=busy_task.id)
    assert len(queries) == 1
    assert [_fields(t) for t in task] == [_fields(busy_task)]
    assert _fields(task[0].status_message) == _fields(busy_task.status_message)
    assert sorted(rows, key=lambda r: r[0]) == seqs.fetch(task=busy_task.id)
    alone = selectors._ARTIFACTS.fetch(task=busy_task.id)
    artifacts.sort(key=lambda a: a.seq)  # a UNION ALL promises no order
    assert [_fields(a) for a in artifacts] == [_fields(a) for a in alone]
    assert together.fetch(id="no-such-task", task="no-such-task") == [[], [], []]
    with pytest.raises(PreparedShapeError):
        PreparedTogether(selectors._TASK, _LOCK).fetch(id=busy_task.id)


def test_a_prepared_row_lock_needs_a_transaction(busy_task):
    """As the ORM's select_for_update: outside a transaction the lock would end at once."""
    from django.db import transaction
    from django.db.transaction import TransactionManagementError

    from a2a.services._core import _LOCK

    with pytest.raises(TransactionManagementError):
        _LOCK.fetch(id=busy_task.id)
    with transaction.atomic():
        assert _LOCK.fetch(id=busy_task.id)[0].pk == busy_task.id


def test_a_values_list_shape_gives_rows(busy_task):
    prepared = Prepared(
        lambda task: (
            Message.objects.filter(task_id=task).order_by("seq").values_list("seq", "role")
        ),
        "task",
    )
    expected = list(
        Message.objects.filter(task_id=busy_task.id).order_by("seq").values_list("seq", "role")
    )
    assert prepared.fetch(task=busy_task.id) == expected
    assert prepared.fetch(task="no-such-task") == []


@pytest.mark.postgres
def test_on_postgresql_a_connection_prepares_the_reads_it_repeats(busy_task):
    """Server-side binding (dashboard/settings.py, TASKDECK_PG_PREPARE): after five
    GetTasks on one connection, PostgreSQL runs its reads as prepared statements, parsed
    and planned once per connection."""

    def prepared() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return {row[0] for row in cursor.fetchall()}

    before = prepared()
    for _ in range(6):
        selectors.get_task(busy_task.id, history_length=None)
    new = prepared() - before
    assert any('FROM "a2a_task"' in sql for sql in new), new
    assert any('FROM "a2a_message"' in sql for sql in new), new


@pytest.mark.postgres
def test_get_tasks_one_statement_is_short_enough_for_psycopg_to_cache_its_parse():
    """psycopg parses a statement's placeholders anew at every call when its text is
    longer than MAX_CACHED_STATEMENT_LENGTH: GetTask's statement, every shape of it, stays
    under (a column more on Task, Message or Artifact may take it past)."""
    from psycopg import _queries

    for shape, together in selectors._GET_TASK.items():
        sql, _ = together._compile("default")
        assert len(sql) <= _queries.MAX_CACHED_STATEMENT_LENGTH, (shape, len(sql))


def test_what_an_ending_touches_is_what_the_orm_finds(make_task):
    """The projector's read when a task ends (agui/projector.py): its open interrupts and
    its answered questions still shown as being worked on, and nothing else — with a JSON
    key lookup inside, on both databases."""
    from datetime import timedelta

    from django.db.models import Q
    from django.utils import timezone

    from agui.models import Interrupt
    from agui.projector import _TOUCHED_BY_AN_END

    task, other = make_task("working"), make_task("working")
    at = timezone.now()
    rows = {
        "open-pause": (Interrupt.Kind.PAUSE, True, {"stage": "paused"}),
        "open-question": (Interrupt.Kind.INPUT_REQUEST, True, {"stage": "awaiting_input"}),
        "answered-working": (Interrupt.Kind.INPUT_REQUEST, False, {"stage": "working"}),
        "answered-done": (Interrupt.Kind.INPUT_REQUEST, False, {"stage": "completed"}),
        "resumed-pause": (Interrupt.Kind.PAUSE, False, {"stage": "working"}),
    }
    for n, (name, (kind, pending, content)) in enumerate(rows.items()):
        for owner in (task, other):
            Interrupt.objects.create(
                interrupt_id=f"{name}-{owner.id}", task=owner, kind=kind, reason="test",
                content=content, pending=pending, created_at=at + timedelta(seconds=n),
            )  # fmt: skip
    orm = Interrupt.objects.filter(task=task).filter(
        Q(pending=True) | Q(kind=Interrupt.Kind.INPUT_REQUEST, content__stage="working")
    )
    found = _TOUCHED_BY_AN_END.fetch(task=task.id)
    assert [_fields(i) for i in found] == [_fields(i) for i in orm]
    assert [i.interrupt_id for i in found] == [
        f"{name}-{task.id}" for name in ("open-pause", "open-question", "answered-working")
    ]


def test_a_uuid_shape_finds_the_row_the_orm_finds(make_task):
    """A job row by its UUID and status (a2a/runtime/wakeups.py, every wakeup of a task
    that ran before): a UUID is passed as the database takes it (native on PostgreSQL,
    hex on SQLite), given as a UUID or as its text."""
    from django_tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    from a2a.runtime.models import RunLease
    from a2a.runtime.wakeups import _READY_JOB

    task, other = make_task(), make_task()
    job_id = RunLease.objects.get(task=task).job_id
    assert job_id is not None and RunLease.objects.get(task=other).job_id != job_id
    orm = DBTaskResult.objects.get(pk=job_id, status=TaskResultStatus.READY)
    for given in (job_id, str(job_id)):
        found = _READY_JOB.first(id=given)
        assert found is not None and _fields(found) == _fields(orm)
    DBTaskResult.objects.filter(pk=job_id).update(status=TaskResultStatus.RUNNING)
    assert _READY_JOB.first(id=job_id) is None  # taken by a worker: no longer pending


def test_a_resume_reads_the_suspension_the_orm_reads(make_task):
    """services._core.current_suspension: the open pause, as `task.current_suspension`
    gives it, and kept on the task (read once)."""
    from a2a.models import Suspension
    from a2a.services._core import current_suspension

    task = make_task("paused-by-client")
    orm = Task.objects.get(pk=task.id).current_suspension
    fresh = Task.objects.get(pk=task.id)
    with CaptureQueriesContext(connection) as reads:
        found = current_suspension(fresh)
        assert current_suspension(fresh) is found and fresh.current_suspension is found
    assert len(reads) == 1
    assert isinstance(found, Suspension) and _fields(found) == _fields(orm)
    working = make_task("working")
    with CaptureQueriesContext(connection) as reads:
        assert current_suspension(working) is None
    assert len(reads) == 0


def test_every_connection_converts_what_it_reads_as_the_orm_does(busy_task):
    """A prepared read finds its converters (JSON, times on SQLite) once per connection:
    the same read again, and on another thread's connection, still gives the ORM's
    values, related objects included."""
    expected = _orm_view(busy_task.id, None)

    def read() -> list:
        view = selectors.get_task(busy_task.id)
        return [
            _fields(view.task),
            _fields(view.task.status_message),
            [_fields(m) for m in view.history],
            [_fields(a) for a in view.artifacts],
        ]

    def read_in_a_thread() -> list:
        try:
            return [read(), read()]
        finally:
            connections.close_all()

    want = [
        _fields(expected.task),
        _fields(expected.task.status_message),
        [_fields(m) for m in expected.history],
        [_fields(a) for a in expected.artifacts],
    ]
    assert read() == want and read() == want
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(read_in_a_thread).result() == [want, want]
    assert read() == want


def test_a_change_writes_its_event_count_and_due_row_together(make_task, hold_projection):
    """A change of state writes its event, the count change and the projection's due row
    (a2a.services._core.record): on PostgreSQL in one statement (PreparedInsert.along,
    data-modifying WITH), elsewhere one by one; either way all three are there, and a
    failing companion leaves none of them."""
    from django.db import IntegrityError, transaction

    from a2a.models import ProjectionDue, TaskCountChange, TaskEvent
    from a2a.services._core import _NEW_DUE, _NEW_EVENT

    task = make_task("working")
    hold_projection()  # its due rows stay to be seen
    before = TaskCountChange.objects.count()
    with CaptureQueriesContext(connection) as seen:
        services.pause_task(task.id, actor=CLIENT, reason="lunch")
    tables = ("a2a_taskevent", "a2a_taskcountchange", "a2a_projectiondue")
    writes = [q["sql"] for q in seen.captured_queries if any(t in q["sql"] for t in tables)]
    writes = [sql for sql in writes if "INSERT INTO" in sql]
    if connection.vendor == "postgresql":
        assert len(writes) == 1 and all(t in writes[0] for t in tables)
    else:
        assert len(writes) == 3
    paused = Task.objects.get(pk=task.id)
    assert TaskCountChange.objects.count() == before + 1
    assert ProjectionDue.objects.filter(task_id=task.id, task_version=paused.version).exists()
    assert TaskEvent.objects.filter(task_id=task.id, task_version=paused.version).count() == 1

    events = TaskEvent.objects.count()
    twice = _NEW_DUE.along(task=paused, task_version=paused.version, at=paused.updated_at)
    with pytest.raises(IntegrityError), transaction.atomic():  # a due row that exists
        _NEW_EVENT.insert(
            along=[twice], task=paused, kind="note", actor="client:test",
            task_version=paused.version + 1, created_at=paused.updated_at,
        )  # fmt: skip
    assert TaskEvent.objects.count() == events
