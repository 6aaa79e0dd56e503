"""The task counts the writers keep (docs/design/a2a-surface.md, D27): every change of a
task's state is counted once, before and after the scheduler folds the changes in, and
ListTasks' totalSize is the exact number where the counts serve its filters."""

from __future__ import annotations

import itertools
import threading

import pytest
from django.db import connection, transaction

from a2a import periodic, selectors, services
from a2a.lifecycle import State
from a2a.models import Task, TaskCount, TaskCountChange
from a2a.services import counts
from tests.conftest import AGENT, CLIENT, task_maker

pytestmark = pytest.mark.django_db(transaction=True)
OTHER = services.Actor("client", "other", tenant="key:other")


def real(owner: str | None = None, states: list[str] | None = None) -> int:
    qs = Task.objects.all()
    if owner is not None:
        qs = qs.filter(owner=owner)
    if states is not None:
        qs = qs.filter(state__in=states)
    return qs.count()


def assert_counts_are_exact() -> None:
    owners = [None, CLIENT.tenant, OTHER.tenant, "key:nobody"]
    states = [None, *([s] for s in State), [State.WORKING, State.PAUSED_BY_CLIENT]]
    for owner, chosen in itertools.product(owners, states):
        assert selectors.count_tasks(owner=owner, states=chosen) == real(owner, chosen), (
            owner,
            chosen,
        )


def a_mix() -> None:
    """Tasks of two tenants in every state, some moved more than once."""
    make = task_maker()
    for state in State:
        make(state)
    task = make(State.WORKING)
    services.pause_task(task.id, actor=CLIENT, reason="hold")
    services.resume_task(task.id, actor=CLIENT)
    services.complete_task(task.id, actor=AGENT, text="done")
    for _ in range(3):
        msg = services.IncomingMessage(message_id=f"o-{_}", parts=[{"kind": "text", "text": "x"}])
        other = services.create_task(msg, actor=OTHER, skill="approval")
    services.start_task(other.id, actor=AGENT)


def test_every_change_of_state_is_counted_once_before_and_after_compaction():
    a_mix()
    assert TaskCount.objects.count() == 0 and TaskCountChange.objects.exists()
    assert_counts_are_exact()
    while counts.compact(limit=4):  # in small batches: each one leaves them exact
        assert_counts_are_exact()
    assert not TaskCountChange.objects.exists()
    a_mix()  # counts and changes together
    assert_counts_are_exact()
    counts.compact()
    assert_counts_are_exact()


def test_a_change_that_rolls_back_is_not_counted():
    before = selectors.count_tasks()
    with pytest.raises(RuntimeError), transaction.atomic():
        msg = services.IncomingMessage(message_id="gone", parts=[{"kind": "text", "text": "x"}])
        services.create_task(msg, actor=CLIENT, skill="approval")
        raise RuntimeError("the caller's transaction fails")
    assert selectors.count_tasks() == before == 0


def test_an_event_that_keeps_the_state_appends_no_change():
    task = task_maker()(State.WORKING)
    changes = TaskCountChange.objects.count()
    services.report_progress(task.id, 1, 2, actor=AGENT)
    assert TaskCountChange.objects.count() == changes


def test_recount_repairs_counts_after_rows_written_around_the_services():
    a_mix()
    counts.compact()
    # a restore or bulk SQL: rows the services never saw
    Task.objects.filter(state=State.WORKING).update(state=State.FAILED)
    assert selectors.count_tasks(states=[State.FAILED]) != real(states=[State.FAILED])
    counts.recount()
    assert not TaskCountChange.objects.exists()
    assert_counts_are_exact()


def test_the_scheduler_folds_changes_in_now_and_then():
    assert counts.compact_now_and_then in periodic.jobs()
    a_mix()
    counts.PACE.last = float("-inf")  # due now
    assert counts.compact_now_and_then() > 0
    assert counts.compact_now_and_then() == 0  # not due again within the period
    assert_counts_are_exact()


def test_concurrent_compactions_take_disjoint_changes():
    """Several schedulers at once (PostgreSQL: SKIP LOCKED): no change folded twice."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: nothing runs concurrently")
    make = task_maker()
    for _ in range(12):
        make(State.COMPLETED)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def compactor() -> None:
        try:
            barrier.wait()
            while counts.compact(limit=5):
                pass
        except BaseException as exc:  # asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=compactor) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not TaskCountChange.objects.exists()
    assert_counts_are_exact()


def list_total(params: dict, actor: services.Actor) -> int:
    return selectors.list_tasks(visible_to=actor, **params).total_size


def key_of(actor: services.Actor) -> services.Actor:
    """The actor as a restricted API key of its tenant sees: its own tasks only."""
    return services.Actor("apikey", actor.name, tenant=actor.tenant, restricted=True)


def test_list_total_is_exact_for_a_tenant_and_for_every_tenant():
    a_mix()
    operator = services.Actor("user", "op")  # not restricted: every tenant's tasks
    mine, other = key_of(CLIENT), key_of(OTHER)
    assert list_total({}, mine) == real(CLIENT.tenant) > 3
    assert list_total({"state": State.COMPLETED}, mine) == real(CLIENT.tenant, ["completed"])
    assert list_total({}, other) == 3
    assert list_total({"state": State.WORKING}, other) == 1
    assert list_total({}, operator) == real()
    assert list_total({"state": State.WORKING}, operator) == real(states=["working"])


def test_a_context_or_time_filter_is_counted_exactly_up_to_the_cap(monkeypatch):
    make = task_maker()
    for _ in range(4):
        make(State.WORKING, context_id="ctx-1")
    make(State.WORKING, context_id="ctx-2")
    mine = key_of(CLIENT)
    assert list_total({"context_id": "ctx-1"}, mine) == 4
    assert list_total({"context_id": "ctx-1"}, key_of(OTHER)) == 0
    monkeypatch.setattr(selectors, "COUNT_CAP", 3)
    assert list_total({"context_id": "ctx-1"}, mine) == 3  # at least three
    assert list_total({"context_id": "ctx-2"}, mine) == 1
    since = Task.objects.order_by("updated_at").values_list("updated_at", flat=True)[1]
    assert list_total({"updated_after": since}, mine) == 3


def test_the_boards_cut_snapshot_counts_the_live_view_from_the_kept_counts():
    """The board's "shows N of M": open tasks from the counts, finished ones still in the
    view counted there; equal to the view's rows, for every tenant and for one."""
    from datetime import timedelta

    from django.utils import timezone

    from agui import projector
    from agui import selectors as view_selectors
    from agui.models import IN_VIEW, ViewTask

    a_mix()
    make = task_maker()
    for _ in range(3):
        make(State.COMPLETED)
    projector.evict_finished(timezone.now() + timedelta(days=1), limit=2)  # two leave
    counts.compact(limit=7)  # some changes folded in, some not
    live = ViewTask.objects.filter(IN_VIEW)
    assert ViewTask.objects.exclude(IN_VIEW).exists()  # the evicted are not counted
    for actor, rows in ((None, live), (key_of(OTHER), live.filter(task__owner=OTHER.tenant))):
        cut = view_selectors.window(max_bytes=1, visible_to=actor)  # nothing fits
        assert cut.snapshot["truncated"]["total"] == rows.count() > 0
