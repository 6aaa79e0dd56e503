"""Inline agents (a2a/runtime/inline.py): a blocking send that creates a task for one runs
it in the web process, with no job; everything else stays the workers'; and a run taken by
a process that then died is not lost (the lease expires, a worker runs it)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import OperationalError
from django_tasks_db.models import DBTaskResult

from a2a import services
from a2a.models import Task
from a2a.runtime import executor, inline, leases
from a2a.runtime.models import RunLease
from tests.conftest import CLIENT
from tests.runtime.conftest import idle, settle_tasks, stream_tck, wait_idle, wait_state

pytestmark = pytest.mark.django_db(transaction=True)
V10 = {"A2A-Version": "1.0"}


def send10(rpc, message_id: str, *, task_id: str | None = None, skill="tck", **config) -> dict:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "go"}]}
    if task_id:
        message["taskId"] = task_id
    params = {"message": message, "metadata": {"skill": skill}, "configuration": config}
    answer = rpc("SendMessage", params, headers=V10)
    assert "error" not in answer, answer
    return answer["result"]["task"]


def jobs_for(task_id: str) -> int:
    return sum(task_id in str(args) for args in DBTaskResult.objects.values_list("args_kwargs"))


def events(task_id: str) -> list[str]:
    return list(Task.objects.get(pk=task_id).events.order_by("id").values_list("kind", flat=True))


def test_a_blocking_send_to_an_inline_agent_is_run_by_the_web_process(runtime, rpc):
    task = send10(rpc, f"tck-complete-task-{uuid.uuid4().hex[:8]}")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    lease = RunLease.objects.get(task_id=task["id"])
    # no job was queued, so no worker could have run it; the web process let the lease go
    assert (lease.job_id, jobs_for(task["id"])) == (None, 0)
    assert (lease.owner, lease.slices, lease.wakeups, lease.served) == ("", 1, 1, 1)
    assert events(task["id"]).count("started") == 1
    assert events(task["id"])[-1] == "completed"


def test_a_streaming_send_to_an_inline_agent_streams_the_run_of_the_web_process(runtime, rpc):
    results = stream_tck(rpc, "tck-stream-001")
    task_id = results[0]["task"]["id"]
    kinds = [next(iter(r)) for r in results]
    assert kinds.count("artifactUpdate") == 1  # every event once, in order, to the end
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (RunLease.objects.get(task_id=task_id).job_id, jobs_for(task_id)) == (None, 0)


def test_the_run_starts_when_the_calls_thread_ends_whatever_the_caller_does_next(runtime):
    """A send's view can be cancelled (its client hung up) between the commit and its wait:
    the run was queued on the event loop as the call's thread ended, so it runs all the
    same — now, not when the lease expires (15 s here), and not on a worker (no job)."""
    message = services.IncomingMessage(
        message_id=f"tck-complete-task-{uuid.uuid4().hex[:8]}",
        parts=[{"kind": "text", "text": "x"}],
    )

    def create() -> str:  # what calls.decide does for a blocking send, in its thread
        with inline.wanted():
            return services.create_task(
                message, actor=CLIENT, skill="tck", metadata={"skill": "tck"}
            ).id

    async def scenario() -> str:
        task_id = await sync_to_async(create, thread_sensitive=False)()
        # no until_settled, no stream: the caller is gone; this loop only keeps serving
        # (the loop must live until the run let its lease go: asyncio.run cancels the rest)
        done = sync_to_async(
            lambda: Task.objects.get(pk=task_id).state == "completed" and idle(task_id),
            thread_sensitive=False,
        )
        deadline = asyncio.get_running_loop().time() + 10
        while not await done():
            assert asyncio.get_running_loop().time() < deadline, "the run did not start"
            await asyncio.sleep(0.02)
        return task_id

    task_id = asyncio.run(scenario())
    assert jobs_for(task_id) == 0


def test_a_send_that_returns_at_once_leaves_the_run_to_a_worker(runtime, rpc):
    task = send10(rpc, f"tck-complete-task-{uuid.uuid4().hex[:8]}", returnImmediately=True)
    # the task as it is when the answer is read: a worker may have taken it already (seen
    # under CI load); what says the send did not run it is the job below
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    wait_state(task["id"], "completed")
    assert RunLease.objects.get(task_id=task["id"]).job_id is not None
    assert jobs_for(task["id"]) == 1


def test_a_blocking_send_to_an_agent_that_is_not_inline_queues_a_job(runtime, rpc):
    task = send10(rpc, f"approve-{uuid.uuid4().hex[:8]}", skill="approval")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # a worker ran it
    assert jobs_for(task["id"]) == 1
    settle_tasks([task["id"]])


def test_later_messages_to_an_inline_task_are_the_workers(runtime, rpc):
    first = send10(rpc, f"conversation-{uuid.uuid4().hex[:8]}")  # 0.3 ids stay working
    assert first["status"]["state"] == "TASK_STATE_WORKING"
    assert jobs_for(first["id"]) == 0
    done = send10(rpc, f"tck-complete-task-{uuid.uuid4().hex[:8]}", task_id=first["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert jobs_for(first["id"]) == 1  # the follow-up woke a worker
    assert RunLease.objects.get(task_id=first["id"]).slices == 2


def test_a_run_taken_by_a_process_that_died_is_run_by_a_worker_after_its_lease(
    runtime, monkeypatch
):
    """What a web process SIGKILLed between the send's commit and its run leaves: a lease
    it holds and no job. The scheduler takes the run over when the lease expires."""
    monkeypatch.setitem(settings.TASKDECK["RUNTIME"], "LEASE_SECONDS", 1.0)
    task = Task.objects.get(pk=taken_here())
    lease = RunLease.objects.get(task_id=task.id)
    assert lease.owner == leases.WORKER_ID  # this process holds it, and never runs it
    assert jobs_for(task.id) == 0
    wait_state(task.id, "completed")
    wait_idle(task.id)
    assert jobs_for(task.id) == 1
    assert events(task.id).count("started") == 1


def test_with_inline_runs_off_a_blocking_send_queues_a_job(runtime, monkeypatch):
    monkeypatch.setitem(settings.TASKDECK["RUNTIME"], "INLINE", False)
    message = services.IncomingMessage(
        message_id=f"tck-complete-task-{uuid.uuid4().hex[:8]}",
        parts=[{"kind": "text", "text": "x"}],
    )
    with inline.wanted() as taken:
        task = services.create_task(message, actor=CLIENT, skill="tck", metadata={"skill": "tck"})
    assert taken == []
    assert RunLease.objects.get(task_id=task.id).job_id is not None
    wait_state(task.id, "completed")
    wait_idle(task.id)


def taken_here() -> str:
    """A new conformance task taken to run inline by this (test) process, which has no
    served event loop: nothing starts its run until the test does."""
    message = services.IncomingMessage(
        message_id=f"tck-complete-task-{uuid.uuid4().hex[:8]}",
        parts=[{"kind": "text", "text": "x"}],
    )
    with inline.wanted() as taken:
        task = services.create_task(message, actor=CLIENT, skill="tck", metadata={"skill": "tck"})
    assert taken == [task.id]
    return task.id


def test_a_database_fault_in_an_inline_run_hands_it_to_a_worker_after_its_back_off(
    runtime, monkeypatch
):
    async def fault(task_id: str, *, fresh: bool = False) -> str:
        raise OperationalError("the database restarted")

    monkeypatch.setattr(executor, "run_slice", fault)  # in this process only
    task_id = taken_here()
    asyncio.run(inline._run(task_id))
    lease = RunLease.objects.get(task_id=task_id)
    assert (lease.owner, lease.faults) == ("", 1)  # handed back, the fault counted
    assert "retrying" in events(task_id)
    wait_state(task_id, "completed")  # the deferred job's worker
    wait_idle(task_id)
    assert jobs_for(task_id) == 1
    assert events(task_id).count("started") == 1


def test_a_runtime_bug_in_an_inline_run_frees_the_lease_and_the_sweep_requeues_it(
    runtime, monkeypatch
):
    async def bug(task_id: str, *, fresh: bool = False) -> str:
        raise RuntimeError("a bug in the runtime")

    monkeypatch.setattr(executor, "run_slice", bug)
    task_id = taken_here()
    asyncio.run(inline._run(task_id))
    lease = RunLease.objects.get(task_id=task_id)
    assert (lease.owner, lease.wakeups, lease.served) == ("", 1, 0)  # wanted, unserved
    assert jobs_for(task_id) == 0
    # the scheduler's sweep of wanted-but-idle runs (REQUEUE_SECONDS, 2 s here) queues it
    wait_state(task_id, "completed")
    wait_idle(task_id)
    assert jobs_for(task_id) == 1
