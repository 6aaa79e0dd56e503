"""A run's lease given back: the slice runs again only when something woke the task while
it ran and the task can still run (a2a.runtime.leases.release). In-process against the
test database; no worker runs here."""

from __future__ import annotations

from datetime import timedelta

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


def test_a_run_that_takes_no_job_keeps_its_lease_through_the_runtime(make_task):
    """The ACP host's turns (a2a.acp_host) take no job: their lease is opened, woken,
    extended and let go by the runtime's functions, and a blocking send reads it as it
    reads a worker's."""
    task = make_task("working")
    RunLease.objects.filter(task=task).delete()  # as if no worker's job had been queued
    leases.open_without_job(task.id)
    assert leases.counts(task.id) == {"wakeups": 1, "served": 0, "owner": ""}
    leases.count_wakeup(task.id)
    assert leases.counts(task.id)["wakeups"] == 2
    served = leases.claim(task.id, "host:1")
    assert served == 2 and leases.counts(task.id)["owner"] == "host:1"
    until = RunLease.objects.get(task=task).expires_at + timedelta(minutes=5)
    leases.extend([task.id], until, "host:2")  # not its lease: nothing changes
    assert RunLease.objects.get(task=task).expires_at < until
    leases.extend([task.id], until, "host:1")
    assert RunLease.objects.get(task=task).expires_at == until
    leases.let_go(task.id, "host:1")
    lease = RunLease.objects.get(task=task)
    assert (lease.owner, lease.expires_at, lease.served) == ("", None, 0)  # nothing served
    assert leases.counts("no-such-task") is None
