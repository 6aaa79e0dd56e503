"""Inline agents (a2a/runtime/inline.py): a blocking send that creates a task for one runs
it in the web process, with no job; everything else stays the workers'; and a run taken by
a process that then died is not lost (the lease expires, a worker runs it)."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import uuid
from collections.abc import Iterator

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
from tests.runtime.conftest import (
    idle,
    settle_tasks,
    state,
    stream_tck,
    wait_idle,
    wait_state,
)

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


def open_stream10(rpc, message_id: str):
    """A 1.0 SendStreamingMessage to the conformance agent, its response left open: the
    caller reads its SSE lines (`sse_results`) and closes it."""
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "go"}]}
    params = {"message": message, "metadata": {"skill": "tck"}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": params}
    headers = {"Authorization": f"Bearer {rpc.token}", **V10}
    return rpc.http.stream("POST", "/a2a/", json=body, headers=headers, timeout=30)


def sse_frames(response) -> Iterator[tuple[str | None, str]]:
    """(SSE id, data) of each event of a response, as they arrive."""
    event_id = None
    for line in response.iter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            yield event_id, line[6:]
            event_id = None


@pytest.mark.parametrize(
    ("scenario", "end"),
    [
        ("tck-complete-task", "TASK_STATE_COMPLETED"),
        ("tck-stream-artifact-chunked", "TASK_STATE_COMPLETED"),
        ("tck-message-response", "TASK_STATE_COMPLETED"),
        ("tck-reject-task", "TASK_STATE_FAILED"),
        ("tck-input-required", "TASK_STATE_INPUT_REQUIRED"),
    ],
)
def test_a_stream_of_an_inline_run_is_its_log_to_the_end_byte_for_byte(runtime, rpc, scenario, end):
    """However the stream waits for the run (the run itself, then the channel layer), what
    it sends is the task's log: the same frames, in order, as a subscriber reconnecting
    from the first event gets, the last one ending the stream with the run's outcome."""
    with open_stream10(rpc, f"{scenario}-{uuid.uuid4().hex[:8]}") as response:
        frames = list(sse_frames(response))
    first = json.loads(frames[0][1])["result"]["task"]
    last = json.loads(frames[-1][1])["result"]["statusUpdate"]
    assert last["status"]["state"] == end  # and the response ended there
    ids = [int(i) for i, _ in frames[1:]]
    assert ids == sorted(set(ids))
    body = {"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": first["id"]}}
    headers = {"Authorization": f"Bearer {rpc.token}", "Last-Event-ID": frames[0][0], **V10}
    with rpc.http.stream("POST", "/a2a/", json=body, headers=headers, timeout=30) as response:
        # a subscription goes on past a turn's end (input-required): read as many events
        replay = list(itertools.islice(sse_frames(response), len(frames) - 1))
    assert replay == frames[1:]
    assert jobs_for(first["id"]) == 0  # the web process ran it


def test_a_stream_shows_a_long_inline_run_while_it_runs_and_ends_with_its_cancel(runtime, rpc):
    """A stream waits for an inline run only so long (one poll interval): a run that goes
    on shows its progress while it runs, and the stream ends when the task does. The
    task comes first, `working`: it was started with its creation (the run took it)."""
    with open_stream10(rpc, f"test-resubscribe-message-id-{uuid.uuid4().hex[:8]}") as response:
        frames = sse_frames(response)
        task = json.loads(next(frames)[1])["result"]["task"]
        task_id = task["id"]
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        # shown while the run is still in its 11 s step: it holds the lease, nothing ended
        assert state(task_id) == "working" and not idle(task_id)
        rpc("CancelTask", {"id": task_id}, headers=V10)
        rest = [json.loads(data)["result"] for _, data in frames]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"  # then it ended
    wait_idle(task_id)  # the run saw the cancel and let the task go itself
    assert jobs_for(task_id) == 0


def test_a_client_hanging_up_while_its_stream_waits_for_the_run_leaves_the_run_going(runtime, rpc):
    with open_stream10(rpc, f"test-resubscribe-message-id-{uuid.uuid4().hex[:8]}") as response:
        task_id = json.loads(next(sse_frames(response))[1])["result"]["task"]["id"]
    # the stream is gone (within its wait for the run); the run goes on in its step
    wait_state(task_id, "working")
    assert not idle(task_id)
    rpc("CancelTask", {"id": task_id}, headers=V10)
    wait_idle(task_id)  # released by the run itself on the cancel: it was still running
    assert jobs_for(task_id) == 0
    assert events(task_id).count("started") == 1


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
    # the task as it is when the answer is read: a worker may have taken it, or even
    # finished it, already (both seen under CI load); what says the send did not run it
    # is the job below
    assert task["status"]["state"] in (
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    )
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


def test_an_inline_run_gives_its_lease_back_in_the_transaction_that_completes_the_task(
    runtime,
):
    """The completion and the lease's release commit together (executor.GiveBack): when
    the completion is visible, the lease is already free and its wakeup served, so no
    worker, scheduler or waiter ever sees a completed task still held by its run."""
    from a2a import events as task_events

    at_completion: list[tuple[str, int]] = []

    def seen(event) -> None:
        if event.kind == "completed":
            lease = RunLease.objects.get(task_id=event.task_id)
            at_completion.append((lease.owner, lease.served))

    task_events.subscribe(seen, on_commit=True)
    try:
        task_id = taken_here()
        asyncio.run(inline._run(task_id))
    finally:
        task_events.unsubscribe(seen)
    assert state(task_id) == "completed"
    assert at_completion == [("", 1)]
    assert (jobs_for(task_id), events(task_id).count("completed")) == (0, 1)


def test_a_database_fault_in_an_inline_run_hands_it_to_a_worker_after_its_back_off(
    runtime, monkeypatch
):
    async def fault(task_id: str, *, fresh: bool = False, give_back: object = None) -> str:
        raise OperationalError("the database restarted")

    monkeypatch.setattr(executor, "run_slice", fault)  # in this process only
    task_id = taken_here()
    asyncio.run(inline._run(task_id))
    lease = RunLease.objects.get(task_id=task_id)
    # handed back: this process holds it no more (a worker may hold it already, its job's
    # back-off over before this read: seen at load 35), the fault counted and said
    assert lease.owner != leases.WORKER_ID
    assert lease.faults == 1 or Task.objects.get(pk=task_id).state == "completed"
    assert "retrying" in events(task_id)
    wait_state(task_id, "completed")  # the deferred job's worker
    wait_idle(task_id)
    assert jobs_for(task_id) == 1
    assert events(task_id).count("started") == 1


def test_a_runtime_bug_in_an_inline_run_frees_the_lease_and_the_sweep_requeues_it(
    runtime, monkeypatch
):
    async def bug(task_id: str, *, fresh: bool = False, give_back: object = None) -> str:
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


def test_only_the_event_loop_that_runs_a_task_is_told_of_its_run(runtime):
    """A stream waits for this process's run of its task (a2a.work.running_here) only on
    the loop that runs it: a waiter on another loop of the process could not await it,
    and follows the task by its announcements instead."""
    from a2a import work

    task_id = taken_here()

    async def elsewhere() -> object:
        return work.running_here(task_id)

    async def scenario() -> tuple[object, object]:
        inline._start(task_id)  # as the call's thread queues it on its loop
        run = work.running_here(task_id)
        other = await asyncio.to_thread(asyncio.run, elsewhere())
        assert run is not None
        await run
        return other, work.running_here(task_id)

    other, after = asyncio.run(scenario())
    assert other is None and after is None  # and none once the run is over
    assert state(task_id) == "completed"
    wait_idle(task_id)


def test_a_stream_whose_inline_run_fails_follows_the_workers_retry_to_the_end(runtime, monkeypatch):
    """The run the stream waited for ended without ending the stream (a database fault
    handed it back): the stream then follows the task by its announcements, through the
    worker's retry, to the completion."""
    from contextlib import aclosing

    from a2a.lifecycle import Dialect
    from a2a.protocol import stream

    async def fault(task_id: str, *, fresh: bool = False, give_back: object = None) -> str:
        raise OperationalError("the database restarted")

    monkeypatch.setattr(executor, "run_slice", fault)  # this process's run only
    task_id = taken_here()
    plan = stream.plan(task_id, Dialect.RFC, None)

    async def follow() -> list[dict]:
        inline._start(task_id)  # as the call's thread queues it on its loop
        items = []
        async with aclosing(stream.follow(plan)) as following:
            async for got in following:
                if got != stream.KEEPALIVE:
                    items.append(got[1])
        return items

    items = asyncio.run(asyncio.wait_for(follow(), 60))
    # the loop's pooled threads are gone; their connections close when collected (a
    # PostgreSQL session left open would keep the test database from being dropped)
    gc.collect()
    assert items[0]["kind"] == "task" and items[0]["status"]["state"] == "working"
    assert items[-1]["status"]["state"] == "completed" and items[-1]["final"] is True
    assert "retrying" in events(task_id)
    assert jobs_for(task_id) == 1  # the worker's retry, which the stream followed
    wait_idle(task_id)
