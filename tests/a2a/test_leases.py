"""A run's lease given back: the slice runs again only when something woke the task while
it ran and the task can still run (a2a.runtime.leases.release). In-process against the
test database; no worker runs here."""

from __future__ import annotations

import pytest

from a2a import services
from a2a.runtime import leases
from a2a.runtime.models import RunLease
from tests.conftest import AGENT, CLIENT, user_message

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_release_runs_again_only_for_a_wakeup_that_landed_meanwhile(make_task):
    task = make_task("working")
    served = leases.claim(task.id)
    assert served is not None
    assert leases.release(task.id, served) is False  # nothing landed: the slice is done
    assert RunLease.objects.get(task=task).owner == ""

    served = leases.claim(task.id)
    services.add_message(task.id, user_message("one more thing"), actor=CLIENT)
    assert leases.release(task.id, served) is True  # the message is this worker's to serve


def test_a_wakeup_meanwhile_does_not_run_a_task_that_can_no_longer_run(make_task):
    task = make_task("working")
    served = leases.claim(task.id)
    services.add_message(task.id, user_message("one more thing"), actor=CLIENT)
    services.complete_task(task.id, actor=AGENT, text="done")
    assert leases.release(task.id, served) is False


def test_a_release_after_a_fault_never_runs_again(make_task):
    task = make_task("working")
    served = leases.claim(task.id)
    services.add_message(task.id, user_message("one more thing"), actor=CLIENT)
    assert served is not None
    assert leases.release(task.id, None) is False  # the scheduler retries it instead
