"""The AG-UI projection runs after the writer's commit (docs/design/projection-after-commit.md,
D8): what each of its guarantees means, tested on both databases. The concurrent ones
(PostgreSQL) are in test_projection_concurrency.py, the process that projects by its own
thread in test_projection_no_new_service.py.

Most tests hold this process's projector thread (`held_projector`, tests/agui/conftest.py):
a commit hands its task to a thread that never projects, which is what the view sees when
the process dies between its commit and its pass. The tests then run the passes
themselves."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import jsonpatch
import pytest
from django.db import connection, transaction
from django.utils import timezone

from a2a import selectors as a2a_selectors
from a2a import services
from a2a.models import ProjectionDue, Task
from agui import projection, selectors
from agui.models import AguiEvent, Interrupt, ViewTask
from agui.projector import EVICTION
from tests.conftest import AGENT, APPROVAL_REQUEST, CLIENT, user_message

ROOT = Path(__file__).resolve().parents[2]
DIE_WITH_US = ["setpriv", "--pdeathsig", "TERM"] if shutil.which("setpriv") else []


# --- what the checks read ------------------------------------------------------------------


def due(task_id: str) -> list[int]:
    """The task versions of the task's due rows."""
    rows = ProjectionDue.objects.filter(task_id=task_id).order_by("task_version")
    return list(rows.values_list("task_version", flat=True))


def log(task_id: str, after: int = 0) -> list[AguiEvent]:
    """The task's AG-UI log rows past the row id `after`, in order."""
    return list(AguiEvent.objects.filter(task_id=task_id, id__gt=after).order_by("id"))


def delta_versions(task_id: str) -> list[int]:
    """The view versions of the task's STATE_DELTA rows (a change of the task; not its
    leaving the view), in log order."""
    return [r.version for r in log(task_id) if r.type == "STATE_DELTA"]


def projected(task_id: str) -> ViewTask:
    return ViewTask.objects.get(task_id=task_id)


def caught_up(task_id: str) -> None:
    """The task's view reflects its version, through gap-free view versions, and nothing
    of it is due."""
    task, view = Task.objects.get(pk=task_id), projected(task_id)
    assert view.task_version == task.version
    versions = [r.version for r in log(task_id) if r.type != EVICTION and "delta" in r.event]
    assert versions == list(range(1, len(versions) + 1)), versions
    assert view.version == len(versions) + (not view.in_view)
    assert due(task_id) == []


def replayed(before: dict, after_row: int) -> dict:
    """`before` (a snapshot) with every STATE_DELTA logged past `after_row` applied in log
    order, as a socket applies them (D4)."""
    state = before
    for row in AguiEvent.objects.filter(id__gt=after_row).order_by("id"):
        if row.event.get("type") == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, row.event["delta"])
    return state


def working_task() -> Task:
    task = services.create_task(user_message("go"), actor=CLIENT, skill="approval")
    services.start_task(task.id, actor=AGENT)
    return Task.objects.get(pk=task.id)


# --- 1. Exactly once across a death ---------------------------------------------------------

# A projector process: it runs a pass over every due row and holds it open just before its
# commit (`projection.before_commit`), says so (with its PostgreSQL backend's pid), and waits
# for a line that never comes: the test kills it there.
PROJECTOR_THAT_DIES = """
import sys
import django

django.setup()
from django.db import connection
from agui import projection


def hold(held):
    backend = connection.connection.info.backend_pid if connection.vendor == "postgresql" else 0
    print("holding", backend, *held, flush=True)
    sys.stdin.readline()


projection.before_commit = hold
projection.project_due()
print("committed", flush=True)
"""


def child_env() -> dict[str, str]:
    """A process of the suite's on this test database (as tests/runtime's workers are)."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "TASKDECK_TEST_DB_SUFFIX": os.environ.get("TASKDECK_TEST_DB_SUFFIX") or str(os.getpid()),
        "TASKDECK_USE_TEST_DB": "1",
        "PYTHONUNBUFFERED": "1",
    }


def first_line(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    """The process's first line of output, waited for at most `timeout`."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"no word from the process: {proc.stderr.read()}") from None


def backend_gone(pid: int) -> None:
    """Wait until PostgreSQL ended the backend `pid` (its transaction rolled back, its
    advisory locks released): the server learns of its client's death a moment after."""
    with connection.cursor() as cursor:
        for _ in range(500):
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone()[0] == 0:
                return
            cursor.execute("SELECT pg_sleep(0.01)")  # the server's own wait, bounded
    raise AssertionError(f"backend {pid} still there after 5 s")


@pytest.mark.django_db(transaction=True)
def test_a_pass_killed_before_its_commit_projects_nothing_and_the_sweep_projects_once(
    held_projector,
):
    task = working_task()
    projection.project_due()
    view_before, cursor = projected(task.id), selectors.cursor()
    services.pause_task(task.id, actor=CLIENT, reason="review")
    services.resume_task(task.id, actor=CLIENT)
    task.refresh_from_db()
    assert held_projector.pending == {task.id}  # handed over, never projected
    assert due(task.id) == [task.version - 1, task.version]

    connection.close()  # the child opens its own
    proc = subprocess.Popen(
        [*DIE_WITH_US, sys.executable, "-c", PROJECTOR_THAT_DIES],
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = first_line(proc).split()
        assert said[:1] == ["holding"] and task.id in said[2:], said
        proc.send_signal(signal.SIGKILL)  # inside its pass: everything written, nothing committed
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    if connection.vendor == "postgresql":
        backend_gone(int(said[1]))

    view = projected(task.id)
    assert (view.version, view.task_version, view.entry) == (
        view_before.version,
        view_before.task_version,
        view_before.entry,
    )
    assert log(task.id, cursor) == []
    assert due(task.id) == [task.version - 1, task.version]
    assert not Interrupt.objects.filter(task=task).exists()

    assert projection.sweep(older_than=0) == 1  # the scheduler's job, its grace period 0
    rows = log(task.id, cursor)
    assert [(r.type, r.version) for r in rows] == [
        ("ACTIVITY_SNAPSHOT", view_before.version + 1),
        ("ACTIVITY_DELTA", view_before.version + 1),
        ("STATE_DELTA", view_before.version + 1),
    ]
    caught_up(task.id)
    assert Interrupt.objects.get(task=task).content["stage"] == "resumed"
    assert projection.sweep(older_than=0) == 0
    assert log(task.id, cursor) == rows


class Refused(Exception):
    pass


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_leaves_no_due_row_and_changes_no_view(held_projector):
    task = working_task()
    projection.project_due()
    held_projector.take()
    view_before, cursor = projected(task.id), selectors.cursor()
    with pytest.raises(Refused), transaction.atomic():
        services.pause_task(task.id, actor=CLIENT, reason="never")
        assert due(task.id) == [task.version + 1]  # written with the change…
        raise Refused
    assert due(task.id) == []  # …and gone with it
    assert held_projector.pending == set()  # its commit never came, nor its wake
    assert projection.project_due() == 0
    assert projection.project([task.id]) == set()
    assert projected(task.id).entry == view_before.entry
    assert log(task.id, cursor) == []


@pytest.mark.django_db
def test_projecting_twice_emits_nothing_the_second_time():
    task = working_task()
    services.pause_task(task.id, actor=CLIENT, reason="review")
    assert projection.project([task.id]) == {task.id}
    rows, view = log(task.id), projected(task.id)
    task.refresh_from_db()
    assert projection.project([task.id]) == set()  # nothing due: not even a pass
    assert log(task.id) == rows
    # a pass that was handed the task again though another's pass projected it since
    # (its due rows were read before that pass committed): the view's own cursor says
    # there is nothing new; it writes nothing and drops the stale mark
    ProjectionDue.objects.create(task=task, task_version=task.version, at=view.updated_at)
    assert projection.project([task.id]) == {task.id}
    again = projected(task.id)
    assert (again.version, again.task_version, again.entry) == (
        view.version,
        view.task_version,
        view.entry,
    )
    assert log(task.id) == rows
    assert due(task.id) == []


# --- 3. Versions in order, coalesced --------------------------------------------------------


@pytest.mark.django_db
def test_five_changes_committed_before_a_pass_are_one_view_change():
    task = working_task()
    projection.project_due()
    before, cursor, version = selectors.snapshot(), selectors.cursor(), projected(task.id).version
    services.pause_task(task.id, actor=CLIENT, reason="first look")
    services.resume_task(task.id, actor=CLIENT)
    services.pause_task(task.id, actor=CLIENT, reason="second look")
    services.resume_task(task.id, actor=CLIENT)
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    first, second = Task.objects.get(pk=task.id).suspensions.order_by("suspended_at")
    assert len(due(task.id)) == 5

    assert projection.project([task.id]) == {task.id}
    rows = log(task.id, cursor)
    iid = f"input-{task.id}-1"
    assert [(r.type, r.event.get("messageId")) for r in rows] == [
        ("ACTIVITY_SNAPSHOT", first.handle),
        ("ACTIVITY_DELTA", first.handle),
        ("ACTIVITY_SNAPSHOT", second.handle),
        ("ACTIVITY_DELTA", second.handle),
        ("ACTIVITY_SNAPSHOT", iid),
        ("STATE_DELTA", None),
    ]
    assert {r.version for r in rows} == {version + 1}
    fresh = selectors.snapshot()
    assert jsonpatch.apply_patch(before, rows[-1].event["delta"]) == fresh
    entry = fresh["view"]["tasks"][task.id]
    assert (entry["version"], entry["taskVersion"]) == (version + 1, task.version + 5)
    assert entry["status"] == "input-required" and iid in fresh["view"]["pendingInterrupts"]
    caught_up(task.id)


# --- 6. Reads of the core stay immediate ----------------------------------------------------


def data_version(html: str) -> int:
    return int(re.search(r'id="task-live"[^>]*data-version="(\d+)"', html).group(1))


@pytest.mark.django_db(transaction=True)
def test_reads_of_the_core_see_a_change_at_once_while_the_view_catches_up(held_projector, rpc, op):
    task = working_task()
    projection.project_due()
    services.pause_task(task.id, actor=CLIENT, reason="look first")
    task.refresh_from_db()
    assert projected(task.id).entry["status"] == "working"  # the view lags…

    got = rpc.result("tasks/get", {"id": task.id})  # …the core's reads do not
    assert got["status"]["state"] == "paused-by-client"
    assert a2a_selectors.get_task(task.id, visible_to=CLIENT).task.state == "paused-by-client"
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert 'data-state="paused-by-client"' in html
    assert "Live details catching up…" in html
    assert data_version(html) == task.version - 1  # what the view reflects

    assert projection.project_due() == 1
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert data_version(html) == task.version
    assert "Live details catching up" not in html


# --- 8. An operator's own action shows at once -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_answer_in_the_dashboard_leaves_the_inbox_at_once_with_no_projector_running(
    held_projector, op
):
    task = working_task()
    services.request_input(task.id, actor=AGENT, explanation="ok?", request=APPROVAL_REQUEST)
    projection.project_due()
    held_projector.pending.clear()
    interrupt = Interrupt.objects.get(task=task, pending=True)
    assert f'action="/inbox/{interrupt.pk}/answer"' in op.get("/inbox").content.decode()

    response = op.post(f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve", "next": "/inbox"})
    assert response.status_code == 302 and response.url == "/inbox"
    assert held_projector.pending == {task.id}  # the projector thread was handed it and never ran
    html = op.get(response.url).content.decode()
    assert "Nothing is waiting for an answer" in html
    assert f'action="/inbox/{interrupt.pk}/answer"' not in html  # a record now, no form
    assert not Interrupt.objects.get(pk=interrupt.pk).pending
    assert due(task.id) == []


def test_a_pass_over_several_tasks_consumes_exactly_the_versions_it_projected(db):
    """A pass over several tasks deletes, per task, the due rows up to the version it read
    and no later one (a version committed after its read is projected by the next pass);
    a task gone since (no row) loses all of its rows. One statement for the pass
    (agui.projection `_consumed`), on each database."""
    at = timezone.now()
    rows = {"t-read-2": [1, 2, 3], "t-gone": [1, 2, 5], "t-read-1": [1, 2], "t-other": [1]}
    for task_id, versions in rows.items():
        for version in versions:
            ProjectionDue.objects.create(task_id=task_id, task_version=version, at=at)
    with transaction.atomic():
        projection._consumed({"t-read-2": 2, "t-gone": None, "t-read-1": 1})
    left = ProjectionDue.objects.order_by("task_id", "task_version")
    assert list(left.values_list("task_id", "task_version")) == [
        ("t-other", 1),
        ("t-read-1", 2),
        ("t-read-2", 3),
    ]
