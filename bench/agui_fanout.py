"""AG-UI projection figures: delta size with 10 and 10,000 tasks, snapshot build time and
size at 10,000 tasks, and WebSocket fan-out latency (commit -> received) with 1, 100 and
1,000 connected clients. Prints figures; asserts nothing.

The 10,000 tasks are open (submitted), so all of them stay in the live view (only finished
tasks leave it, docs/agui.md "How big the view gets"): the whole view's snapshot is
measured (what the invariant compares, never sent), and so is what a socket sends first —
the view cut to TASKDECK_VIEW_SNAPSHOT_BYTES, with how many tasks that holds.

    .venv/bin/python bench/agui_fanout.py [--scale-out] [--clients 1,100,1000] [--changes 20]
        [--writer process|bench] [--load N] [--web 2]

Fan-out is measured on a small view (so 1,000 sockets don't each download a 10,000-task
snapshot); the 10,000 tasks are added afterwards for the snapshot and delta figures.

The changes (pause, resume, … 20 a second) are committed by a process of their own by
default, as a worker's are (`--writer process`); `--writer bench` commits them from the
bench process itself, whose event loop also reads every socket (its announcements then
queue behind the readers).

The AG-UI projection runs after the writer's commit (docs/design/projection-after-commit.md,
D8). The served Daphne and the writer process run it as production does (TASKDECK_PROJECTION
at its default, `thread`: the writer's projector thread projects its changes), so commit ->
received includes the projection's lag by construction. This process builds tasks and
reads the view at once (make_tasks, the delta size, the snapshot timings), so it projects
on the committing thread (`sync`), and so does `--writer bench`. A pass may coalesce
several changes of the task into one view change (one STATE_DELTA), so the readers follow
the entry's `taskVersion`: a delta whose entry reaches task version v delivers change v
and every one before it, and each change is timed from its commit to the first delta that
covers it. The lag (agui.projection.lag) is printed after each fan-out run.

--load N: while each fan-out run is measured, wrk keeps N blocking SendMessage calls in
flight against the same Daphne (bench/load.py's send-blocking: the `tck` agent runs
inline in the web process, so every call commits three changes its projector thread
projects): commit -> received and the lag then include a busy server's and projector's
share. The sends answered with a completed task, a second, are printed beside the
figures; any other answer fails the run (until 2026-11-29 the per-key creation limit
refused all but 120 of them, and the figures were taken beside refusals).

"Received" is when the kernel put the frame's last packet in the client's socket
(SO_TIMESTAMPNS, bench/_stamped_ws.py), not when this process got round to reading it:
it reads 100 sockets on the server's own two cores, where each client of a real board
has a CPU of its own. The time this process read each frame is printed beside, and
"each socket after the first" is how much later than the change's first socket each
socket's frame arrived (the spread of one change's fan-out).

--web 2: the server as `make run` starts it (`manage.py serve --web 2`: two Daphne
processes on the port, the kernel spreading the sockets and wrk's connections over them)
instead of one Daphne. Each run also prints where its time went: the bench polls the
task's view row every 5 ms, which splits commit -> received into commit -> in the view
(the projection) and in the view -> received (the log's reader and the sockets), to the
poll's 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _harness import (
    ROOT,
    configure,
    connections_by_process,
    free_port,
    percentiles,
    send_params,
    served,
    start_server,
    wait_for,
    wait_for_port,
)
from _stamped_ws import StampedSocket


def make_tasks(n: int, prefix: str) -> None:
    """Tasks through the real services (so view rows are real), in bulk transactions."""
    from django.db import transaction

    from a2a import services

    actor = services.Actor("operator", "bench")
    with transaction.atomic():
        for i in range(n):
            msg = services.IncomingMessage(
                message_id=f"{prefix}-{i}", parts=[{"kind": "text", "text": f"{prefix} {i}"}]
            )
            services.create_task(msg, actor=actor, skill="batch")


def commit_change(task_id: str, i: int, actor) -> tuple[int, float]:
    """Pause (even i) or resume the task; its new task version and when it committed (an
    on-commit callback registered before the services' own runs first: before any
    projection, whatever the process's mode)."""
    from django.db import transaction

    from a2a import services

    change = services.pause_task if i % 2 == 0 else services.resume_task
    at: list[float] = []
    with transaction.atomic():
        transaction.on_commit(lambda: at.append(time.time()))
        outcome = change(task_id, actor=actor)
    return outcome.task.version, at[0]


def make_changes(task_id: str, changes: int) -> None:
    """`--changes-of TASK_ID`: pause and resume the task `changes` times, 20 a second, as a
    worker process would (its projector thread projects them); print each committed task
    version and when it committed. Warmed up first, as a worker that has been running is:
    a database query, an announcement, and a pause and resume of another task, projected
    by the process's projector thread before the first timed change (so that change does
    not pay the thread's start: its connection, its start-up sweep, the first compilation
    of the pass's statements — what a cold process's first change pays, 20-40 ms here)."""
    import django

    django.setup()
    from a2a import collector, notify, services
    from a2a.models import ProjectionDue, Task

    collector.settle()  # as a worker does at its start (a2a/runtime/.../run_worker.py)
    Task.objects.filter(pk=task_id).exists()
    notify.send("bench-warm-up", {"type": "bench.warm"})
    actor = services.Actor("operator", "bench")
    other = Task.objects.filter(state="submitted").exclude(pk=task_id).order_by("created_at")
    warm = other.values_list("pk", flat=True).first()
    if warm is not None:
        services.pause_task(warm, actor=actor, reason="bench warm-up")
        services.resume_task(warm, actor=actor)
        wait_for(lambda: not ProjectionDue.objects.filter(task_id=warm).exists(), timeout=30)
        time.sleep(0.6)  # the sockets' reader hands the warm-up's rows and counts over
    for i in range(changes):
        version, at = commit_change(task_id, i, actor)
        print(json.dumps({"version": version, "at": at}), flush=True)
        time.sleep(0.05)


async def changes_elsewhere(task_id: str, changes: int) -> dict[int, float]:
    """Run make_changes in a child process (projecting as a served process does); its task
    versions and commit times."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--changes-of", task_id, "--changes", str(changes),
        stdout=asyncio.subprocess.PIPE, env=served(dict(os.environ)),
    )  # fmt: skip
    out, _ = await child.communicate()
    if child.returncode:
        raise RuntimeError(f"the writer process exited with {child.returncode}")
    lines = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    return {line["version"]: line["at"] for line in lines}


def covered(event: dict, path: str) -> int | None:
    """The task version a STATE_DELTA brings the entry at `path` to, if it touches it."""
    reached = None
    for op in event["delta"]:
        if op["path"] == f"{path}/taskVersion":
            reached = op["value"]
        elif op["path"] == path and op["op"] in ("add", "replace"):
            reached = op["value"].get("taskVersion", reached)
    return reached


async def fanout(
    url: str, token: str, clients: int, changes: int, writer: str = "process"
) -> Fanout:
    from asgiref.sync import sync_to_async

    from a2a import services
    from a2a.models import Task
    from agui import view

    task_id = await sync_to_async(lambda: Task.objects.order_by("created_at").first().id)()
    actor = services.Actor("operator", "bench")
    headers = {"Authorization": f"Bearer {token}", "Origin": "http://127.0.0.1"}
    path = view.task_path(task_id)
    marker = path.encode()
    wanted: list[range] = [range(0)]  # the task versions the changes make, once known
    snapshots = [0]
    frames = [0]  # messages the sockets read while the changes were measured
    received: list[dict[int, float]] = []  # per socket: version -> the kernel's arrival
    read: list[dict[int, float]] = []  # per socket: version -> when this process read it
    all_in = asyncio.get_running_loop().create_future()
    complete = [0]

    def reader() -> Callable[[bytes, float, float], None]:
        got: dict[int, float] = {}
        seen: dict[int, float] = {}
        snapshot = [False]
        received.append(got)
        read.append(seen)

        def on_text(payload: bytes, stamp: float, now: float) -> None:
            if not snapshot[0]:  # what a socket is sent first ends with the snapshot
                if json.loads(payload)["type"] == "STATE_SNAPSHOT":
                    snapshot[0] = True
                    snapshots[0] += 1
                return
            if not wanted[0]:
                return
            frames[0] += 1
            # Only the messages about the measured task are decoded (this process reads
            # every socket on the server's own two cores).
            if marker not in payload:
                return
            event = json.loads(payload)
            if event["type"] != "STATE_DELTA" or (reached := covered(event, path)) is None:
                return
            for version in wanted[0]:  # this delta delivers every change up to `reached`
                if version <= reached and version not in got:
                    got[version], seen[version] = stamp, now
            if len(got) == len(wanted[0]):
                complete[0] += 1
                if complete[0] == clients and not all_in.done():
                    all_in.set_result(None)

        return on_text

    sockets = []
    for _ in range(clients):
        ws = StampedSocket(reader())
        await ws.connect(url, headers)
        sockets.append(ws)
    while snapshots[0] < clients:  # the snapshots drained
        await asyncio.sleep(0.01)
    base = await sync_to_async(lambda: Task.objects.get(pk=task_id).version)()
    wanted[0] = range(base + 1, base + changes + 1)
    in_view: dict[int, float] = {}  # task version -> when the view first reached it

    def view_version() -> int:
        from agui.models import ViewTask

        row = ViewTask.objects.filter(task_id=task_id).values_list("task_version", flat=True)
        return row.first() or 0

    async def watch_view() -> None:
        """Where the time goes: the view's row polled every 5 ms (a few hundred small
        reads a second beside the load) splits commit -> received into the projection's
        part (commit -> in the view) and the fan-out's (in the view -> received)."""
        read_view = sync_to_async(view_version, thread_sensitive=False)
        while len(in_view) < len(wanted[0]):
            reached = await read_view()
            now = time.time()
            for version in wanted[0]:
                if version <= reached:
                    in_view.setdefault(version, now)
            await asyncio.sleep(0.005)

    watcher = asyncio.ensure_future(watch_view())
    committed: dict[int, float] = {}
    if writer == "process":
        committed = await changes_elsewhere(task_id, changes)
    else:
        change = sync_to_async(commit_change)
        for i in range(changes):
            version, at = await change(task_id, i, actor)
            committed[version] = at
            await asyncio.sleep(0.05)  # 20 changes a second
    await asyncio.wait_for(asyncio.gather(all_in, watcher), timeout=120)
    for ws in sockets:
        ws.close()
    first = {v: min(got[v] for got in received) for v in wanted[0]}
    return Fanout(
        latencies=[got[v] - committed[v] for got in received for v in got],
        read_late=[seen[v] - committed[v] for seen in read for v in seen],
        frames=frames[0] / clients,
        projected=[in_view[v] - committed[v] for v in wanted[0]],
        fanned=[got[v] - in_view[v] for got in received for v in got],
        spread=[got[v] - first[v] for got in received for v in got],
    )


@dataclass
class Fanout:
    """One fan-out run's timings, seconds: commit -> the kernel's arrival at each socket
    (`latencies`), commit -> this process's reading of it (`read_late`), commit -> in the
    view, in the view -> arrival, and each socket's arrival after the change's first."""

    latencies: list[float]
    read_late: list[float]
    frames: float
    projected: list[float]
    fanned: list[float]
    spread: list[float]


def start_serve(env: dict[str, str], port: int, web: int) -> subprocess.Popen:
    """`manage.py serve` with `web` processes on `port`, as `make run` starts Taskdeck (no
    agent workers: the load's `tck` agent runs inline, and the changes come from the
    bench's writer process; the scheduler runs, as it does there). Stopped by SIGTERM."""
    env = served(env)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--host", "127.0.0.1",
         "--port", str(port), "--web", str(web), "--workers", "0", "--grpc-port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=open(Path(env["TASKDECK_VAR_DIR"]) / "serve.log", "w"),  # noqa: SIM115
    )  # fmt: skip
    wait_for_port(port, proc, "manage.py serve", timeout=90)
    return proc


def start_load(port: int, token: str, connections: int, var: str) -> subprocess.Popen:
    """wrk keeping `connections` blocking sends in flight against the served Daphne (the
    script bench/load.py writes for its send-blocking operation)."""
    import load  # bench/load.py: its wrk scripts and what an ok answer looks like

    params = {
        "host": "127.0.0.1",
        "ports": [port],
        "path": "/a2a/",
        "headers": {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"},
        "nonce": uuid.uuid4().hex[:12],
        "want": load.WANT["send-blocking"],
        "id_prefix": "tck-complete-task-",
        "body": load.split_body(load.rpc_body("SendMessage", send_params("@@X@@"))),
    }
    script = os.path.join(var, f"fanout-load-{params['nonce']}.lua")
    with open(script, "w") as f:
        f.write(
            f"params = {load.lua_value(params)}\n"
            f"dofile({load.lua_value(str(load.WRK_DIR / 'common.lua'))})\n"
            f"dofile({load.lua_value(str(load.WRK_DIR / 'call.lua'))})\n"
        )
    return subprocess.Popen(
        ["wrk", "-t1", f"-c{connections}", "-d3600s", "--timeout", "30s", "-s", script,
         f"http://127.0.0.1:{port}/a2a/"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def stop_load(wrk: subprocess.Popen) -> str:
    """Stop wrk (SIGINT: it prints its report) and say what it did: the blocking sends
    answered with a completed task a second, and any other answer (bench/wrk/common.lua
    judges each one). A load that was refused is not the load the figures claim: it is
    printed with its first bad answer, and the run fails."""
    wrk.send_signal(signal.SIGINT)
    out, _ = wrk.communicate(timeout=30)
    found = re.search(r"BENCH ok=(\d+) bad=(\d+) requests=\d+ duration_us=(\d+)", out)
    if not found:
        raise RuntimeError(f"wrk did not report: {out[-300:]}")
    ok, bad, micros = (int(g) for g in found.groups())
    if bad:
        sample = re.search(r"BENCH-SAMPLE (.*)", out)
        raise RuntimeError(
            f"{bad} of the load's {ok + bad} sends were not answered with a completed "
            f"task: {sample.group(1)[:300] if sample else ''}"
        )
    return f"{ok / (micros / 1e6):.0f} blocking sends/s completed beside it"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--clients", default="1,100,1000")
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--writer", choices=["process", "bench"], default="process")
    parser.add_argument("--load", type=int, default=0, help="blocking sends in flight (wrk)")
    parser.add_argument(
        "--fanout-only", action="store_true", help="skip the 10,000-task snapshot figures"
    )
    parser.add_argument(
        "--web",
        type=int,
        default=1,
        help="web processes on the port: 1, one Daphne; 2, `manage.py serve --web 2` as "
        "`make run` starts it (the kernel spreads sockets and wrk's connections over both)",
    )
    parser.add_argument("--changes-of", help=argparse.SUPPRESS)  # the writer process
    args = parser.parse_args()
    if args.changes_of:  # the environment is the parent's (configure() already ran)
        sys.path.insert(0, str(ROOT))
        make_changes(args.changes_of, args.changes)
        return
    env = configure(args.scale_out)
    # this process reads the view right after its own writes (the served Daphne and the
    # writer process do not inherit this: bench/_harness.py `served`)
    os.environ.setdefault("TASKDECK_PROJECTION", "sync")

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from a2a import api_keys, services
    from agui import projection, selectors
    from agui.models import AguiEvent

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write", "operator"])
    make_tasks(10, "small")
    port = free_port()
    server = start_server(env, port) if args.web == 1 else start_serve(env, port, args.web)
    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    web = "one Daphne process" if args.web == 1 else f"manage.py serve --web {args.web}"
    print(f"AG-UI projection benchmark ({mode}; {web}; changes by the {args.writer})")
    try:
        url = f"ws://127.0.0.1:{port}/ws/agui/"
        for n in [int(c) for c in args.clients.split(",")]:
            wrk = start_load(port, token, args.load, tempfile.gettempdir()) if args.load else None
            split = connections_by_process(port, args.load) if wrk is not None else []
            # this process's own collections (it reads every socket) are not the server's
            # latency: what it holds so far is kept out of them (a collection walking it
            # took 30-95 ms here, and delayed every socket's reading at once), and no
            # collection runs while the sockets are read (the garbage the readers make
            # meanwhile still made full collections of up to 300 ms at --load 16); real
            # clients are browsers with an interpreter and a CPU each
            gc.collect()
            gc.freeze()
            gc.disable()
            try:
                run = asyncio.run(fanout(url, token, n, args.changes, args.writer))
                lag = projection.lag()
            finally:
                gc.enable()
                beside = f"; {stop_load(wrk)}" if wrk is not None else ""
                if split and args.web > 1:
                    beside += f" (its connections by web process: {', '.join(map(str, split))})"
            print(
                f"fan-out, {n:>5} clients: commit -> STATE_DELTA received  "
                f"{percentiles(run.latencies)}"
                f"; lag at the end {lag.seconds * 1000:.0f} ms ({lag.due_rows} due rows)"
                f"; {run.frames:.0f} messages a socket" + beside
            )
            print(f"  of which commit -> in the view  {percentiles(run.projected)}")
            print(f"  and in the view -> received     {percentiles(run.fanned)}")
            print(f"  each socket after the first     {percentiles(run.spread)}")
            print(f"  (read by this process: commit -> {percentiles(run.read_late)})")
    finally:
        server.terminate()
        server.wait(timeout=30)
    if args.fanout_only:
        return
    actor = services.Actor("operator", "bench")

    def delta_bytes() -> int:
        from a2a.models import Task

        task_id = Task.objects.filter(state="submitted").order_by("created_at").first().id
        cursor = selectors.cursor()
        services.pause_task(task_id, actor=actor, reason="bench")
        row = AguiEvent.objects.get(id__gt=cursor, type="STATE_DELTA")
        return len(json.dumps(row.event, separators=(",", ":")))

    small = delta_bytes()
    make_tasks(10_000 - 10, "large")
    large = delta_bytes()
    print(f"STATE_DELTA for one pause: {small} bytes with 10 tasks, {large} bytes with 10,000")
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        queries_before = len(connection.queries)
        snap = selectors.snapshot()
        body = json.dumps(snap, separators=(",", ":"))
        timings.append(time.perf_counter() - started)
    del queries_before
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        selectors.snapshot()
    print(
        "STATE_SNAPSHOT of {} tasks: {:.1f} MB, built (queries + JSON) in median {:.0f} ms "
        "over 5 runs, {} queries".format(
            len(snap["view"]["tasks"]),
            len(body) / 1e6,
            sorted(timings)[2] * 1000,
            len(ctx.captured_queries),
        )
    )
    from agui import view

    budget = view.limits().snapshot_bytes
    with CaptureQueriesContext(connection) as ctx:
        started = time.perf_counter()
        window = selectors.window(max_bytes=budget)
        took = time.perf_counter() - started
    sent = json.dumps(
        {"type": "STATE_SNAPSHOT", "snapshot": window.snapshot}, separators=(",", ":")
    )
    shown = len(window.snapshot["view"]["tasks"])
    print(
        f"socket's opening STATE_SNAPSHOT: {shown} of {len(snap['view']['tasks'])} tasks, "
        f"{len(sent) / 1024:.0f} KiB (budget {budget // 1024} KiB, {len(sent) // max(shown, 1)} "
        f"bytes a task), built in {took * 1000:.0f} ms, {len(ctx.captured_queries)} queries"
    )


if __name__ == "__main__":
    main()
