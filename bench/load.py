"""JSON-RPC load: Taskdeck's scale-out deployment against a minimal a2a-sdk 1.3.0 server,
N concurrent clients per operation. Prints a table; asserts nothing.

    make install interop-venv                # once: .venv, and .venv-interop with the SDK
    .venv/bin/python bench/load.py [--clients 16] [--seconds 10 | --requests N]
                                   [--warmup 2] [--ops get,send,send-blocking,pause-resume]
                                   [--servers taskdeck,sdk] [--keep-db]

Needs PostgreSQL (127.0.0.1:5432, user postgres) and Redis (127.0.0.1:6379) running.

The servers, started and stopped by the bench (also on Ctrl+C or an error):
- Taskdeck as `make scale-out` runs it: `manage.py serve --port P1,P2 --workers 2`, i.e.
  two Daphne processes, two db_workers (poll 0.2 s) and the scheduler, with DATABASE_URL
  on a fresh database `taskdeck_bench` (created and migrated here, dropped at the end),
  REDIS_URL redis db 5, DEBUG off. Clients alternate between the two ports. Auth: an API
  key with scopes read,write,agent made in the bench database (what `manage.py
  create_api_key` does).
- bench/sdk_server.py: the SDK's DefaultRequestHandler, in-memory task store and JSON-RPC
  app under uvicorn (one process), run with .venv-interop/bin/python -I.

Both speak A2A 1.0 (`A2A-Version: 1.0`): the SDK's JSON-RPC app serves only 1.0 unless its
0.3 compatibility is switched on. Operations (one "request" = one JSON-RPC call):
- get            GetTask of an existing (completed) task, one per client.
- send           SendMessage with returnImmediately: Taskdeck's `tck` skill (metadata.skill)
                 with a `tck-complete-task-*` message id, whose agent completes at once
                 with "Hello from TCK"; the SDK's executor does the same inline. Taskdeck
                 answers `submitted` and leaves the run to its workers (the backlog they
                 had left when the run ended is printed); the SDK answers after its
                 executor's first event.
- send-blocking  the same SendMessage, blocking (1.0's default): the answer is the
                 completed task. On Taskdeck that includes a worker picking the job up.
- pause-resume   PauseTask then ResumeTask on a working task (one per client: `tck` with a
                 non-`tck-` message id stays working); one "request" here is the pair.
                 Taskdeck only: the SDK has no pause; its answer is printed instead.
Each operation runs on each server in turn: --warmup seconds not counted, then --seconds
(or --requests per client). req/s counts successful calls; p50/p99 are over successful
calls; errors are HTTP statuses other than 200, JSON-RPC errors, unexpected results and
transport failures (the first few are printed); Taskdeck/SDK is the ratio of req/s. After
each Taskdeck run the bench waits for its workers to empty the job queue. A second table
gives the CPU used over each measurement, from /proc: by the server's processes (for
Taskdeck with its PostgreSQL backends, without Redis), per successful call, and by the load
generator (one asyncio process, httpx), which shares the machine's cores with the servers:
on a small machine it can be what limits the faster server.
Exit status 1 if a server fails to start, dies, or answers nothing but errors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from _harness import ROOT, configure, drop_bench_db, free_port, quantile, wait_for_port

INTEROP_PY = ROOT / ".venv-interop" / "bin" / "python"
OPS = ("get", "send", "send-blocking", "pause-resume")
LABELS = {
    "get": "GetTask",
    "send": "SendMessage (returnImmediately)",
    "send-blocking": "SendMessage (blocking)",
    "pause-resume": "PauseTask+ResumeTask (pairs)",
}


class Failure(Exception):
    """One call that did not give the expected answer."""


class ServerDied(Exception):
    pass


@dataclass
class Server:
    name: str
    bases: list[str]
    headers: dict[str, str]
    procs: list[subprocess.Popen]
    log: Path
    pause_supported: bool
    # per-client fixtures, filled by setup()
    done_tasks: list[str] = field(default_factory=list)
    working_tasks: list[str] = field(default_factory=list)

    def cpu_pids(self) -> list[int]:
        """The server's processes: its own, the children `manage.py serve` printed, and
        the PostgreSQL backends connected to taskdeck_bench (Redis is not counted)."""
        pids = [p.pid for p in self.procs]
        if self.name == "Taskdeck":
            pids += child_pids(self.log)
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        if b"taskdeck_bench" in (entry / "cmdline").read_bytes():
                            pids.append(int(entry.name))
                    except OSError:
                        pass
        return pids

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise ServerDied(f"{self.name} exited with {proc.returncode}; log: {self.log}")
        for pid in child_pids(self.log):  # serve takes a while to notice and stop the rest
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("gone", "Z"):
                raise ServerDied(f"{self.name}: its process {pid} died; log: {self.log}")


@dataclass
class Result:
    requests: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    cpu: float = 0.0  # load generator CPU seconds over the measurement
    server_cpu: float = 0.0  # the server's processes' CPU seconds over the measurement

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed > 0 else 0.0


# ---------------------------------------------------------------------------- JSON-RPC


async def rpc(client, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}
    try:
        response = await client.post("/", json=body)
    except Exception as exc:  # transport: refused, reset, timeout
        raise Failure(f"{type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise Failure(f"HTTP {response.status_code}: {response.text[:200]}")
    answer = response.json()
    if "error" in answer:
        err = answer["error"]
        raise Failure(f"{err.get('code')} {err.get('message')}")
    return answer["result"]


def send_params(message_id: str, *, immediately: bool) -> dict:
    params = {
        "message": {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": "bench"}]},
        "metadata": {"skill": "tck"},
    }
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    return params


def expect(result: dict, path: str, wanted) -> None:
    value = result
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    ok = value in wanted if isinstance(wanted, tuple) else value == wanted
    if not ok:
        raise Failure(f"{path} = {value!r}, expected {wanted!r}")


async def op_get(server: Server, client, i: int) -> None:
    expect(await rpc(client, "GetTask", {"id": server.done_tasks[i]}), "id", server.done_tasks[i])


async def op_send(server: Server, client, i: int) -> None:
    result = await rpc(client, "SendMessage", send_params(_tck_id(), immediately=True))
    expect(result, "task.status.state", ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
                                         "TASK_STATE_COMPLETED"))  # fmt: skip


async def op_send_blocking(server: Server, client, i: int) -> None:
    result = await rpc(client, "SendMessage", send_params(_tck_id(), immediately=False))
    expect(result, "task.status.state", "TASK_STATE_COMPLETED")


async def op_pause_resume(server: Server, client, i: int) -> None:
    task_id = server.working_tasks[i]
    paused = await rpc(client, "PauseTask", {"taskId": task_id, "reason": "bench"})
    expect(paused, "state", "TASK_STATE_PAUSED_BY_CLIENT")
    resumed = await rpc(client, "ResumeTask", {"taskId": task_id})
    expect(resumed, "state", "TASK_STATE_WORKING")


OP_CALLS = {
    "get": op_get,
    "send": op_send,
    "send-blocking": op_send_blocking,
    "pause-resume": op_pause_resume,
}


def _tck_id() -> str:
    return f"tck-complete-task-{uuid.uuid4().hex}"


def make_clients(server: Server, n: int):
    import httpx

    return [
        httpx.AsyncClient(
            base_url=server.bases[i % len(server.bases)],
            headers={**server.headers, "A2A-Version": "1.0"},
            timeout=60,
        )
        for i in range(n)
    ]


async def setup(server: Server, clients: int, ops: list[str]) -> None:
    """One completed task per client (for get) and one working task (for pause-resume)."""
    pool = make_clients(server, clients)
    try:

        async def done(i: int) -> str:
            r = await rpc(pool[i], "SendMessage", send_params(_tck_id(), immediately=False))
            expect(r, "task.status.state", "TASK_STATE_COMPLETED")
            return r["task"]["id"]

        async def working(i: int) -> str:
            params = send_params(f"bench-idle-{uuid.uuid4().hex}", immediately=False)
            r = await rpc(pool[i], "SendMessage", params)
            expect(r, "task.status.state", "TASK_STATE_WORKING")
            return r["task"]["id"]

        if "get" in ops:
            server.done_tasks = await asyncio.gather(*(done(i) for i in range(clients)))
        if "pause-resume" in ops and server.pause_supported:
            server.working_tasks = await asyncio.gather(*(working(i) for i in range(clients)))
    finally:
        await asyncio.gather(*(c.aclose() for c in pool))


async def probe_pause(server: Server) -> str:
    """What a server without pause answers to PauseTask."""
    (client,) = make_clients(server, 1)
    async with client:
        try:
            await rpc(client, "PauseTask", {"taskId": str(uuid.uuid4())})
        except Failure as exc:
            return f"PauseTask -> {exc}"
    return "PauseTask -> answered without an error"


async def measure(server: Server, op: str, args) -> Result:
    call = OP_CALLS[op]
    pool = make_clients(server, args.clients)
    result = Result()
    loop = asyncio.get_running_loop()
    start = loop.time()
    warm_end = start + args.warmup
    end = None if args.requests else warm_end + args.seconds
    last_finish = warm_end
    cpu: dict[str, float] = {}

    async def client_loop(i: int) -> None:
        nonlocal last_finish
        counted = 0
        while True:
            t0 = loop.time()
            if end is not None and t0 >= end:
                return
            if args.requests and t0 >= warm_end and counted >= args.requests:
                return
            try:
                await call(server, pool[i], i)
                error = None
            except Failure as exc:
                error = str(exc)
            t1 = loop.time()
            if t0 < warm_end:
                continue
            counted += 1
            result.requests += 1
            last_finish = max(last_finish, t1)
            if error is None:
                result.latencies.append(t1 - t0)
            else:
                result.errors += 1
                if len(result.samples) < 3:
                    result.samples.append(error)

    async def mark() -> None:
        await asyncio.sleep(args.warmup)
        cpu["self"], cpu["server"] = self_cpu(), proc_cpu(server.cpu_pids())

    try:
        await asyncio.gather(mark(), *(client_loop(i) for i in range(args.clients)))
    finally:
        await asyncio.gather(*(c.aclose() for c in pool))
    result.elapsed = last_finish - warm_end
    result.cpu = self_cpu() - cpu["self"]
    result.server_cpu = proc_cpu(server.cpu_pids()) - cpu["server"]
    return result


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def proc_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (/proc/PID/stat), those gone skipped."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def child_pids(log: Path) -> list[int]:
    """The pids `manage.py serve` printed ("(pids web-8001=123, ...)")."""
    try:
        found = re.search(r"\(pids (.*)\)", log.read_text(errors="replace"))
    except OSError:
        return []
    return [int(p) for p in re.findall(r"=(\d+)", found[1])] if found else []


# ---------------------------------------------------------------------------- processes


def start_taskdeck(env: dict[str, str], var: Path, servers: list[Server]) -> None:
    """Migrate the bench database, make an API key, start `manage.py serve` (appended to
    `servers` before waiting, so that it is stopped whatever happens next)."""
    import django

    django.setup()
    from django.core.management import call_command

    from a2a import api_keys

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench-load", ["read", "write", "agent"])
    ports = [free_port(), free_port()]
    log = var / "taskdeck-serve.log"
    cmd = [sys.executable, str(ROOT / "manage.py"), "serve", "--host", "127.0.0.1",
           "--port", ",".join(map(str, ports)), "--workers", "2"]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(
        name="Taskdeck",
        bases=[f"http://127.0.0.1:{p}/a2a/" for p in ports],
        headers={"Authorization": f"Bearer {token}"},
        procs=[proc],
        log=log,
        pause_supported=True,
    )
    servers.append(server)
    for p in ports:
        wait_for_port(p, proc, "manage.py serve", timeout=90)


def start_sdk(var: Path, servers: list[Server]) -> None:
    if not INTEROP_PY.exists():
        raise RuntimeError(f"{INTEROP_PY} is missing: run `make interop-venv`")
    port = free_port()
    log = var / "sdk-server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "TASKDECK"))}
    cmd = [str(INTEROP_PY), "-I", str(ROOT / "bench" / "sdk_server.py"), "--port", str(port)]
    with open(log, "w") as out:
        # cwd outside the repository; -I keeps its `a2a/` off the path
        proc = subprocess.Popen(
            cmd, cwd=var, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(
        name="a2a-sdk",
        bases=[f"http://127.0.0.1:{port}/"],
        headers={},
        procs=[proc],
        log=log,
        pause_supported=False,
    )
    servers.append(server)
    wait_for_port(port, proc, "bench/sdk_server.py", timeout=60)


def stop(server: Server) -> None:
    """SIGTERM (serve stops its children itself), then SIGKILL; then any child of
    `manage.py serve` still alive (by the pids it printed), in case serve itself died."""
    for proc in server.procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in server.procs:
        try:
            proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pid in child_pids(server.log):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"manage.py" in cmdline or b"daphne" in cmdline:
            os.kill(pid, signal.SIGKILL)


def backlog() -> int:
    """Taskdeck jobs not yet run to the end (READY or RUNNING)."""
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.filter(status__in=["READY", "RUNNING"]).count()


def drain(timeout: float = 180) -> float:
    """Wait until Taskdeck's workers have run every queued job; seconds it took."""
    start = time.monotonic()
    while backlog():
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"Taskdeck's workers left {backlog()} jobs after {timeout:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - start


def taskdeck_health(server: Server) -> list[str]:
    from django.db.models import Count
    from django_tasks_db.models import DBTaskResult

    from a2a.models import Task

    states = dict(Task.objects.values_list("state").annotate(n=Count("id")).order_by())
    failed_jobs = DBTaskResult.objects.filter(status="FAILED").count()
    text = server.log.read_text(errors="replace")
    tracebacks = text.count("Traceback")
    http_5xx = len(re.findall(r'" 5\d\d ', text))
    runs = sorted(
        (done - started).total_seconds()
        for started, done in DBTaskResult.objects.filter(status="SUCCESSFUL").values_list(
            "started_at", "finished_at"
        )
    )
    lines = [
        "Taskdeck tasks by state: " + ", ".join(f"{k} {v}" for k, v in sorted(states.items())),
        f"Taskdeck agent runs (jobs) done: {len(runs)}, each holding a worker for "
        + (
            f"p50 {quantile(runs, 0.5) * 1000:.0f} ms, p99 {quantile(runs, 0.99) * 1000:.0f} ms"
            if runs
            else "-"
        ),
        f"Taskdeck failed jobs: {failed_jobs}; in its log: {tracebacks} tracebacks, "
        f"{http_5xx} HTTP 5xx answers",
    ]
    if tracebacks:
        lines.append(f"  (see {server.log})")
    return lines


# ---------------------------------------------------------------------------- report


def row(op: str, name: str, r: Result | None, note: str = "", ratio: str = "") -> str:
    label = LABELS[op]
    if r is None:
        return f"{label:<31} {name:<9} {note}"
    lat = sorted(r.latencies)
    p50 = f"{quantile(lat, 0.5) * 1000:8.1f}" if lat else f"{'-':>8}"
    p99 = f"{quantile(lat, 0.99) * 1000:8.1f}" if lat else f"{'-':>8}"
    return (
        f"{label:<31} {name:<9} {r.requests:>8} {r.errors:>6} {r.rate:>8.1f} {p50} {p99}"
        f" {ratio:>13}{note}"
    )


def cpu_row(op: str, name: str, r: Result) -> str:
    busy = r.server_cpu / r.elapsed * 100 if r.elapsed else 0
    per_call = r.server_cpu / len(r.latencies) * 1000 if r.latencies else 0
    gen = r.cpu / r.elapsed * 100 if r.elapsed else 0
    return f"{LABELS[op]:<31} {name:<9} {busy:>8.0f} {per_call:>8.2f} {gen:>9.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] + " " + __doc__.splitlines()[1],
        epilog="Operations: " + ", ".join(OPS) + ". See the top of bench/load.py.",
    )
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (16)")
    parser.add_argument("--seconds", type=float, default=10, help="measured seconds per op (10)")
    parser.add_argument(
        "--requests", type=int, default=0, help="measure N requests per client instead"
    )
    parser.add_argument("--warmup", type=float, default=2, help="uncounted seconds first (2)")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated, from: %(default)s")
    parser.add_argument("--servers", default="taskdeck,sdk", help="%(default)s, or one of them")
    parser.add_argument("--keep-db", action="store_true", help="leave taskdeck_bench in place")
    args = parser.parse_args()
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    names = [s.strip() for s in args.servers.split(",") if s.strip()]
    if bad := [o for o in ops if o not in OPS] + [s for s in names if s not in ("taskdeck", "sdk")]:
        parser.error(f"unknown: {', '.join(bad)}")
    if args.clients < 1:
        parser.error("--clients must be at least 1")

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    var = Path(tempfile.mkdtemp(prefix="taskdeck-bench-load-"))
    servers: list[Server] = []
    made_db = False
    status = 0
    try:
        if "taskdeck" in names:
            made_db = True
            env = {**configure(scale_out=True), "TASKDECK_DEBUG": "0"}
            start_taskdeck(env, var, servers)
        if "sdk" in names:
            start_sdk(var, servers)
        for server in servers:
            asyncio.run(setup(server, args.clients, ops))
        taskdeck = next((s for s in servers if s.name == "Taskdeck"), None)
        mode = f"{args.requests} requests per client" if args.requests else f"{args.seconds:g} s"
        print(
            f"A2A JSON-RPC load: {args.clients} clients, {mode} per operation after "
            f"{args.warmup:g} s warm-up; A2A 1.0 methods (A2A-Version: 1.0)"
        )
        if taskdeck:
            print("Taskdeck: manage.py serve, 2 Daphne (clients alternate ports), 2 db_workers, "
                  "scheduler; PostgreSQL taskdeck_bench + Redis; DEBUG off")  # fmt: skip
        if any(s.name == "a2a-sdk" for s in servers):
            print("a2a-sdk:  1.3.0 DefaultRequestHandler + InMemoryTaskStore, one uvicorn "
                  "process (bench/sdk_server.py)")  # fmt: skip
        idle = {s.name: proc_cpu(s.cpu_pids()) for s in servers}
        time.sleep(3)
        idle = {s.name: (proc_cpu(s.cpu_pids()) - idle[s.name]) / 3 * 100 for s in servers}
        print("idle CPU before the runs (pollers): " + ", ".join(
            f"{name} {pct:.0f}% of one core" for name, pct in idle.items()))  # fmt: skip
        head = f"{'operation':<31} {'server':<9} {'requests':>8} {'errors':>6} {'req/s':>8}"
        print(f"{head} {'p50 ms':>8} {'p99 ms':>8} {'Taskdeck/SDK':>13}")
        cpu_rows: list[str] = []
        for op in ops:
            rates: dict[str, float] = {}
            for server in servers:
                server.check_alive()
                if op == "pause-resume" and not server.pause_supported:
                    answer = asyncio.run(probe_pause(server))
                    print(row(op, server.name, None, f"not supported ({answer})"))
                    continue
                r = asyncio.run(measure(server, op, args))
                server.check_alive()
                rates[server.name] = r.rate
                ratio = ""
                if server.name == "a2a-sdk" and rates.get("Taskdeck") and r.rate:
                    ratio = f"{rates['Taskdeck'] / r.rate:.2f}"
                print(row(op, server.name, r, ratio=ratio), flush=True)
                for sample in r.samples:
                    print(f"    error sample: {sample}")
                cpu_rows.append(cpu_row(op, server.name, r))
                if r.requests and r.errors == r.requests:
                    raise ServerDied(f"{server.name} answered every {op} call with an error")
                if server is taskdeck:
                    left = backlog()
                    took = drain()
                    if op == "send":
                        print(
                            f"    Taskdeck's workers had {left} runs still queued when the "
                            f"measurement ended; they finished them {took:.1f} s later"
                        )
        if taskdeck:
            for line in taskdeck_health(taskdeck):
                print(line)
        print(
            "\nCPU over each measurement: the server's processes (Taskdeck: serve, 2 Daphne, "
            "2 workers, scheduler\nand its PostgreSQL backends; Redis not counted) and the "
            "load generator, in % of one core"
        )
        print(f"{'operation':<31} {'server':<9} {'server %':>8} {'ms/call':>8} {'loadgen %':>9}")
        print("\n".join(cpu_rows))
    except (ServerDied, Failure) as exc:  # Failure: a setup call went wrong
        print(f"server failed: {exc}", file=sys.stderr)
        status = 1
    except RuntimeError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not skip cleanup
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for server in servers:
            stop(server)
            code = server.procs[0].returncode
            if code not in (0, -signal.SIGTERM):
                print(f"{server.name} exited with {code}; log: {server.log}", file=sys.stderr)
                status = status or 1
        if made_db and not args.keep_db:
            try:
                drop_bench_db()
            except Exception as exc:  # e.g. PostgreSQL was never reachable
                print(f"could not drop taskdeck_bench: {exc}", file=sys.stderr)
                status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
