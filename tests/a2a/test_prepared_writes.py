"""Prepared writes (a2a/prepared.py) write what the ORM writes, on both databases: each
one used on the hot path is run next to the ORM's own create/save/update with the same
values, and the two rows read back are equal column for column (JSON, times, UUIDs,
NULLs, defaults), as are the instances the caller gets."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import DatabaseError, IntegrityError, connection, models, transaction
from django.db.models import signals
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext, isolate_apps
from django.utils import timezone

from a2a.models import Message, MessageReceipt, Suspension, Task, TaskCountChange, TaskEvent
from a2a.prepared import PreparedInsert, PreparedShapeError, PreparedUpdate
from a2a.runtime import leases
from a2a.runtime.models import RunLease
from a2a.services import _core, counts, pausing, receipts, tasks
from agui.models import AguiEvent, AguiThread, ViewTask

pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = {"plain": "x", "unicode": "\u00e9\u2713 \U0001f600", "quote": 'it\'s "q" \\ %s'}
JSON = {"n": 1, "f": 1.5, "nested": [1, {"x": None, "t": True}], "s": TEXTS["unicode"]}


def _row(model, pk) -> dict:
    """The row as the ORM reads it back (not the instance written)."""
    obj = model.objects.get(pk=pk)
    return {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields}


def _without(row: dict, *names: str) -> dict:
    return {k: v for k, v in row.items() if k not in names}


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


START = timezone.now()


def _task(**values) -> Task:
    at = START  # the same for every task here, so two tasks' rows compare equal
    base = dict(context_id="ctx", state="working", status_timestamp=at, created_at=at)
    return Task.objects.create(updated_at=at, **{**base, **values})


def test_a_new_task_is_the_row_create_writes():
    at = timezone.now()
    values = dict(
        context_id=str(uuid.uuid4()), skill="echo", state="submitted", status_timestamp=at,
        metadata=JSON, created_by="api:k", created_at=at, updated_at=at, version=1,
        origin="a2a", origin_ref=TEXTS["quote"], origin_title=TEXTS["unicode"], owner="t1",
    )  # fmt: skip
    orm = Task.objects.create(**values)
    prepared = tasks._NEW_TASK.insert(**values)
    assert prepared.pk != orm.pk and len(prepared.pk) == len(orm.pk)  # the default, anew
    assert _without(_row(Task, prepared.pk), "id") == _without(_row(Task, orm.pk), "id")
    assert _without(_fields(prepared), "id") == _without(_fields(orm), "id")
    assert not prepared._state.adding and prepared._state.db == "default"


@pytest.mark.parametrize("text", TEXTS.values())
def test_a_message_and_an_event_are_the_rows_create_writes(text):
    task = _task()
    at = timezone.now()
    message = dict(
        task=task, seq=1, message_id="m", role="user", parts=[{"kind": "text", "text": text}],
        metadata=JSON, reference_task_ids=["a", "b"], created_at=at,
    )  # fmt: skip
    orm = Message.objects.create(**message)
    prepared = _core._NEW_MESSAGE.insert(**{**message, "seq": 2})
    assert prepared.pk == orm.pk + 1  # the id the database gave, set on the instance
    assert _without(_row(Message, prepared.pk), "id", "seq") == _without(
        _row(Message, orm.pk), "id", "seq"
    )
    assert _without(_fields(prepared), "id", "seq") == _without(_fields(orm), "id", "seq")
    with CaptureQueriesContext(connection) as lazy:
        assert prepared.task is task  # kept, as create(task=task) keeps it
    assert len(lazy) == 0

    event = dict(
        task=task, kind="message_added", from_state="working", to_state="working",
        actor="api:k", reason=text, data={"messageSeq": 2, **JSON}, task_version=3,
        created_at=at,
    )  # fmt: skip
    orm = TaskEvent.objects.create(**event)
    prepared = _core._NEW_EVENT.insert(**event)
    assert prepared.pk == orm.pk + 1
    assert _without(_row(TaskEvent, prepared.pk), "id") == _without(_row(TaskEvent, orm.pk), "id")
    # defaults (reason "", data {}) as create fills them
    bare = dict(task_id=task.pk, kind="k", actor="a", task_version=4, created_at=at)
    orm, prepared = TaskEvent.objects.create(**bare), _core._NEW_EVENT.insert(**bare)
    assert _without(_row(TaskEvent, prepared.pk), "id") == _without(_row(TaskEvent, orm.pk), "id")


def test_a_lease_and_a_receipt_are_the_rows_create_writes():
    at = timezone.now()
    for job in (uuid.uuid4(), None):
        a, b = _task(), _task()
        values = dict(wakeups=1, enqueued_at=at, job_id=job, expires_at=at + timedelta(seconds=5))
        RunLease.objects.create(task_id=a.pk, **values)
        lease = leases.NEW.insert(task_id=b.pk, **values)
        assert lease.pk == b.pk
        assert _without(_row(RunLease, b.pk), "task_id") == _without(
            _row(RunLease, a.pk), "task_id"
        )
    receipt = dict(
        tenant="t", task_id=a.pk, digest="d" * 64, created=True, answered=False, created_at=at
    )
    orm = MessageReceipt.objects.create(message_id="m1", **receipt)
    prepared = receipts._NEW.insert(message_id="m2", **receipt)
    assert _without(_row(MessageReceipt, prepared.pk), "id", "message_id") == _without(
        _row(MessageReceipt, orm.pk), "id", "message_id"
    )
    # a unique clash is the ORM's IntegrityError, and the transaction goes on being usable
    with pytest.raises(IntegrityError), transaction.atomic():
        receipts._NEW.insert(message_id="m2", **receipt)
    assert MessageReceipt.objects.filter(message_id="m2").count() == 1


def test_a_count_change_is_the_row_create_writes():
    values = dict(owner=TEXTS["unicode"], from_state="", to_state="submitted")
    orm = TaskCountChange.objects.create(**values)
    prepared = counts._NEW_CHANGE.insert(**values)
    assert prepared.pk != orm.pk
    assert _without(_row(TaskCountChange, prepared.pk), "id") == _without(
        _row(TaskCountChange, orm.pk), "id"
    )


@pytest.mark.parametrize("suspended", [False, True])
def test_a_task_saved_with_update_fields_is_the_row_save_writes(suspended):
    orm, prepared = _task(), _task()
    at = timezone.now() + timedelta(seconds=1)
    fields = ("version", "updated_at", "state", "status_timestamp", "progress", "status_message")
    message = Message.objects.create(
        task=orm, seq=1, message_id="m", role="agent", parts=[], created_at=at
    )
    for task in (orm, prepared):
        task.version, task.updated_at, task.state, task.status_timestamp = 7, at, "paused", at
        task.progress = None if suspended else {"done": 1, "of": JSON}
        task.status_message_id = None if suspended else message.pk
    orm.save(update_fields=list(fields))
    with CaptureQueriesContext(connection) as queries:
        _core._SAVE_TASK.save(prepared, fields)
    assert len(queries) == 1
    assert _without(_row(Task, prepared.pk), "id") == _without(_row(Task, orm.pk), "id")
    # a column left out is not written
    prepared.skill = "changed"
    _core._SAVE_TASK.save(prepared, ("version",))
    assert Task.objects.get(pk=prepared.pk).skill == ""


def test_a_lease_saved_is_the_row_save_writes():
    a, b = _task(), _task()
    for task in (a, b):
        leases.NEW.insert(task_id=task.pk, wakeups=1)
    orm, prepared = RunLease.objects.get(pk=a.pk), RunLease.objects.get(pk=b.pk)
    for holder in ("w:1", ""):
        for lease in (orm, prepared):
            lease.owner, lease.expires_at = holder, (timezone.now() if holder else None)
            lease.served, lease.faults, lease.job_id = 1, 0, uuid.uuid4() if holder else None
        prepared.expires_at = orm.expires_at
        prepared.job_id = orm.job_id
        fields = ("owner", "expires_at", "served", "faults", "job_id")
        orm.save(update_fields=list(fields))
        leases.SAVE.save(prepared, fields)
        assert _without(_row(RunLease, b.pk), "task_id") == _without(
            _row(RunLease, a.pk), "task_id"
        )


def test_an_update_of_a_view_row_is_the_rows_update_writes():
    from agui import projector

    a, b = _task(), _task()
    at = timezone.now()
    for task in (a, b):
        ViewTask.objects.create(
            task_id=task.pk, entry={}, status="working", version=1, updated_at=at
        )
    row = {"entry": {"e": JSON}, "status": "paused", "version": 2, "in_view": False}
    assert ViewTask.objects.filter(task_id=a.pk).update(updated_at=at, **row) == 1
    assert projector._SAVE_VIEW.update(b.pk, updated_at=at, **row) == 1
    assert _without(_row(ViewTask, b.pk), "task_id") == _without(_row(ViewTask, a.pk), "task_id")
    assert projector._SAVE_VIEW.update("no-such-task", updated_at=at, **row) == 0


@pytest.mark.parametrize("resume_input", [None, {"answer": JSON}])
def test_a_suspension_opened_and_ended_is_the_row_the_orm_writes(resume_input):
    task = _task()
    at = timezone.now()
    values = dict(
        task=task, initiator="client", dialect="rfc", reason=TEXTS["quote"], mode="",
        conditions={"until": "event", "event": "e"}, on_event="e", trigger_event="",
        summary=TEXTS["unicode"], deadline=None, paused_from="working", requested_by="api:k",
        metadata=JSON, suspended_at=at,
    )  # fmt: skip
    orm = Suspension.objects.create(**values)
    prepared = pausing._NEW_SUSPENSION.insert(**values)
    assert prepared.handle != orm.handle  # the default, anew
    skip = ("id", "handle")
    assert _without(_row(Suspension, prepared.pk), *skip) == _without(
        _row(Suspension, orm.pk), *skip
    )
    for susp in (orm, prepared):
        susp.ending, susp.ended_at, susp.ended_by, susp.cause = "resumed", at, "op:a", "client"
        susp.had_resume_input, susp.resume_input = resume_input is not None, resume_input
        susp.continue_transcript, susp.resumed_to = True, "working"
    orm.save(update_fields=list(pausing._RESUMED_FIELDS))
    pausing._SAVE_SUSPENSION.save(prepared, pausing._RESUMED_FIELDS)
    assert _without(_row(Suspension, prepared.pk), *skip) == _without(
        _row(Suspension, orm.pk), *skip
    )


@pytest.mark.parametrize("count", [1, 3, PreparedInsert.MANY + 2, 150])
def test_agui_rows_inserted_together_are_the_rows_bulk_create_writes(count):
    from agui import projector

    task = _task()
    at = timezone.now()

    def rows(start: int) -> list[AguiEvent]:
        return [
            AguiEvent(task_id=task.pk, version=start + i, type="STATE_DELTA",
                      event={"delta": [{"op": "add", "value": JSON}], "i": i}, created_at=at)
            for i in range(count)
        ]  # fmt: skip

    orm = AguiEvent.objects.bulk_create(rows(0))
    prepared = projector._NEW_EVENTS.insert_all(rows(0))
    assert [e.pk for e in prepared] == [orm[-1].pk + 1 + i for i in range(count)]
    assert all(not e._state.adding and e._state.db == "default" for e in prepared)
    read = {e.pk: _without(_fields(e), "id") for e in AguiEvent.objects.order_by("pk")}
    assert [read[e.pk] for e in prepared] == [read[e.pk] for e in orm]
    assert projector._NEW_EVENTS.insert_all([]) == []


def test_save_of_a_row_that_is_gone_fails_as_the_orms_does():
    task = _task()
    Task.objects.filter(pk=task.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        task.save(update_fields=["version"])
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        _core._SAVE_TASK.save(task, ("version",))


@isolate_apps("a2a")  # a model of the test's own, in no app's registry
def test_a_shape_the_orm_would_write_differently_is_refused():
    # auto_now_add: the ORM fills it in pre_save, which a prepared write does not run
    with pytest.raises(PreparedShapeError, match="created_at"):
        PreparedInsert(AguiThread).insert(thread_id="t", context_id="c", created_by="x")

    # a database default (db_default without a Python one): the ORM leaves it to the database
    class WithDbDefault(models.Model):  # noqa: DJ008
        n = models.IntegerField(db_default=1)

        class Meta:
            app_label = "a2a"

    with pytest.raises(PreparedShapeError, match="n is not a plain column"):
        PreparedInsert(WithDbDefault).insert()

    # save signals: the ORM sends them, a prepared write would not
    def heard(**kwargs):
        pass

    signals.post_save.connect(heard, sender=Message)
    try:
        with pytest.raises(PreparedShapeError, match="signals"):
            PreparedInsert(Message).insert(task=_task(), seq=1, message_id="m", role="user",
                                           parts=[], created_at=timezone.now())  # fmt: skip
        with pytest.raises(PreparedShapeError, match="signals"):
            PreparedUpdate(Message).update(1, role="agent")
    finally:
        signals.post_save.disconnect(heard, sender=Message)
    with pytest.raises(PreparedShapeError):
        PreparedUpdate(Task).save(_task(), ("id",))  # the key is not a column to set
    with pytest.raises(PreparedShapeError, match="no column"):
        PreparedUpdate(Task).update("x", nope=1)
    with pytest.raises(TypeError, match="nope"):  # as Task(nope=1) refuses it
        tasks._NEW_TASK.insert(context_id="c", nope=1)
    assert not AguiThread.objects.exists()


def test_the_sqlite_writers_queue_sees_a_prepared_write_as_a_write():
    """Outside a transaction a write queues on the writers' flock (dashboard/sqlite_backend):
    the prepared statements start as the ORM's do, so the queue sees them as writes."""
    from dashboard.sqlite_backend import base

    task = _task()
    with CaptureQueriesContext(connection) as queries:
        lease = leases.NEW.insert(task_id=task.pk, wakeups=1)
        lease.owner = "w:1"
        leases.SAVE.save(lease, ("owner",))
        _core._NEW_EVENT.insert(
            task=task, kind="k", actor="a", task_version=1, created_at=timezone.now()
        )
    assert len(queries) == 3
    assert all(base._WRITE.match(q["sql"]) for q in queries)


def test_a_failed_write_marks_its_atomic_block_for_rollback_as_the_orms_does():
    """A clash caught inside the block must not let the block commit what came before
    (SQLite would: its transaction survives a failed statement)."""
    a = _task()
    at = timezone.now()
    receipt = dict(tenant="t", task_id=a.pk, digest="d" * 64, created=True, answered=False)
    receipts._NEW.insert(message_id="m", created_at=at, **receipt)
    with pytest.raises(TransactionManagementError), transaction.atomic():
        receipts._NEW.insert(message_id="kept?", created_at=at, **receipt)
        with pytest.raises(IntegrityError):
            receipts._NEW.insert(message_id="m", created_at=at, **receipt)
        assert transaction.get_rollback()  # the ORM's create marks it too
        MessageReceipt.objects.count()  # the block cannot go on
    assert not MessageReceipt.objects.filter(message_id="kept?").exists()


def test_an_unsaved_related_object_is_refused_as_the_orm_refuses_it():
    with pytest.raises(ValueError, match="unsaved related object 'task'"):
        _core._NEW_EVENT.insert(task=Task(id=None), kind="created", actor="a", task_version=1,
                                created_at=timezone.now())  # fmt: skip
    assert not TaskEvent.objects.exists()
