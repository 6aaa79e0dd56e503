"""Concurrent actions on one task serialise (docs/design/task-states.md, D14): real threads,
each with its own database connection, released together by a barrier."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection

from a2a import services
from a2a.errors import StaleHandle
from a2a.lifecycle import TransitionRefused
from a2a.models import Suspension, TaskEvent
from tests.conftest import CLIENT, local_async_http

pytestmark = pytest.mark.django_db(transaction=True)
N = 50


def run_together(n: int, action: Callable[[int], str]) -> Counter:
    """Run action(i) in n threads released at the same instant; count the outcomes."""
    barrier = threading.Barrier(n)
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        try:
            barrier.wait()
            result = action(i)
        except Exception as exc:  # recorded, then asserted on by the test
            result = f"unexpected {type(exc).__name__}: {exc}"
        finally:
            connection.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(outcomes) == n, "a thread did not finish"
    return Counter(outcomes)


@pytest.mark.postgres
def test_fifty_concurrent_resumes_one_wins(make_task):
    task = make_task("paused-by-client")
    handle = task.current_suspension.handle

    def resume(i: int) -> str:
        try:
            # half name the handle, half don't: both kinds must lose cleanly
            services.resume_task(task.id, actor=CLIENT, handle=handle if i % 2 else None)
            return "resumed"
        except TransitionRefused:
            return "not paused"
        except StaleHandle:
            return "stale handle"

    outcomes = run_together(N, resume)
    assert outcomes["resumed"] == 1, outcomes
    assert outcomes["not paused"] + outcomes["stale handle"] == N - 1, outcomes
    assert TaskEvent.objects.filter(task=task, kind="resumed").count() == 1
    assert Suspension.objects.get(handle=handle).ending == "resumed"


@pytest.mark.postgres
def test_fifty_concurrent_pauses_make_one_suspension(make_task):
    task = make_task("working")

    def pause(i: int) -> str:
        return services.pause_task(task.id, actor=CLIENT, reason=f"op {i}").suspension.handle

    outcomes = run_together(N, pause)
    assert len(outcomes) == 1, outcomes  # everyone got the same handle (idempotent pause)
    (handle,) = outcomes
    assert handle.startswith("suspend-")
    assert Suspension.objects.filter(task=task).count() == 1
    assert TaskEvent.objects.filter(task=task, kind="paused").count() == 1


def test_fifty_concurrent_http_resumes_one_wins(rpc, make_task):
    """The same race through the live server: requests run in parallel worker threads."""
    task = make_task("paused-by-client")
    handle = task.current_suspension.handle
    body = {
        "jsonrpc": "2.0",
        "method": "tasks/resume",
        "params": {"taskId": task.id, "handle": handle},
    }

    async def fire() -> list[dict]:
        headers = {"Authorization": f"Bearer {rpc.token}"}
        async with local_async_http(base_url=str(rpc.http.base_url), timeout=60) as client:
            answers = await asyncio.gather(
                *(client.post("/a2a/", json={**body, "id": i}, headers=headers) for i in range(N))
            )
        return [a.json() for a in answers]

    answers = asyncio.run(fire())
    codes = Counter(a["error"]["code"] if "error" in a else "ok" for a in answers)
    assert codes["ok"] == 1, codes
    assert codes[-32013] + codes[-32012] == N - 1, codes
    assert TaskEvent.objects.filter(task=task, kind="resumed").count() == 1


def test_a_stream_that_starts_while_an_artifact_grows_sends_each_part_once(make_task):
    """A subscription's first item is the task as read by three statements (task, messages,
    artifacts); an append committed between them used to be in that snapshot and, again,
    after its cursor: a client that applies both shows the part twice."""
    from a2a.lifecycle import Dialect
    from a2a.models import Artifact
    from a2a.protocol import stream

    task = make_task("working")
    services.add_artifact(task.id, actor=CLIENT, parts=[{"kind": "text", "text": "0"}],
                          artifact_id="out")  # fmt: skip
    appended: list[str] = []

    def append_before_the_artifacts_are_read(execute, sql, params, many, context):
        if not appended and Artifact._meta.db_table in sql and sql.lstrip().startswith("SELECT"):
            appended.append("1")  # another writer commits just now
            services.add_artifact(task.id, actor=CLIENT, parts=[{"kind": "text", "text": "1"}],
                                  artifact_id="out", append=True)  # fmt: skip
        return execute(sql, params, many, context)

    with connection.execute_wrapper(append_before_the_artifacts_are_read):
        plan = stream.plan(task.id, Dialect.RFC, None)
    assert appended, "the append did not happen during the read"
    parts = [p["text"] for a in plan.first["artifacts"] for p in a["parts"]]
    for _, item, _ in stream.events_after(task.id, plan.cursor, Dialect.RFC):
        if item["kind"] == "artifact-update":
            parts += [p["text"] for p in item["artifact"]["parts"]]
    assert parts == ["0", "1"]
