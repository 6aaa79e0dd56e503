"""Retry from the failed step and re-run, end to end with real worker processes (issue 29):
a batch that failed at item 7 is retried from the dashboard; the retry replays items 0-6
from the failed run's step journal and runs 7 on — no earlier item runs twice, which the
agent's own ledger of the items it worked on shows — and its artifact holds every item."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2a.models import Task
from a2a.runtime.models import StepRecord
from dashboard.models import AuditEntry
from tests.runtime.agents.fragile import RESULTS
from tests.runtime.conftest import settle_tasks, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)


def ran(ledger: Path, task_id: str) -> list[int]:
    """The items the agent worked on for `task_id`, in order, repeats included."""
    lines = ledger.read_text().split("\n") if ledger.exists() else []
    return [int(line.split()[1]) for line in lines if line.startswith(f"{task_id} ")]


def test_a_batch_failed_at_item_7_retries_from_item_7(start, op, tmp_path):
    ledger = tmp_path / "ledger"
    broken = Path(f"{ledger}.broken")
    broken.touch()  # the outside service is down
    failed = start("fragile", "Re-render 10 thumbnails", items=10, failAt=7, ledger=str(ledger))
    wait_state(failed.id, "failed")
    wait_idle(failed.id)
    assert ran(ledger, failed.id) == list(range(8))  # 0-6 done, 7 tried and failed
    assert "item 7: the image service is down" in failed.events.get(kind="failed").reason
    page = op.get(f"/tasks/{failed.id}").content.decode()
    assert (
        "Retry from the failed step" in page
        and "The agent&#x27;s error: RuntimeError: item 7" in page
    )

    broken.unlink()  # fixed
    response = op.post(f"/tasks/{failed.id}/retry")
    retry = Task.objects.get(rerun_of=failed)
    try:
        assert response["Location"] == f"/tasks/{retry.id}"
        wait_state(retry.id, "completed")
        wait_idle(retry.id)
    finally:
        settle_tasks([retry.id])

    assert ran(ledger, retry.id) == [7, 8, 9]  # no earlier item ran again
    replayed = StepRecord.objects.filter(task=retry, name__startswith="item ").order_by("seq")
    results = [s.result for s in replayed]
    assert [r["item"] for r in results] == list(range(10))
    assert {r["by"] for r in results[:7]} == {failed.id}  # carried, not recomputed
    assert {r["by"] for r in results[7:]} == {retry.id}
    artifact = retry.artifacts.get(artifact_id=RESULTS)
    assert [p["data"]["item"] for p in artifact.parts] == list(range(10))
    retry.refresh_from_db()
    assert (retry.state, retry.progress) == ("completed", {"done": 10, "total": 10})
    assert AuditEntry.objects.get(action="retry", task_id=failed.id).outcome == "ok"
    assert "Retry of" in op.get(f"/tasks/{retry.id}").content.decode()


def test_a_rerun_starts_from_the_beginning(start, op, tmp_path):
    ledger = tmp_path / "ledger"
    first = start("fragile", "Three items", items=3, ledger=str(ledger))
    wait_state(first.id, "completed")
    wait_idle(first.id)
    op.post(f"/tasks/{first.id}/rerun")
    again = Task.objects.get(rerun_of=first)
    try:
        wait_state(again.id, "completed")
    finally:
        settle_tasks([again.id])
    assert ran(ledger, first.id) == ran(ledger, again.id) == [0, 1, 2]
    assert again.rerun_kind == "rerun" and again.metadata == first.metadata
