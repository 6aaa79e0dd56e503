"""JSON-RPC load, driven by wrk: Taskdeck (as `make run` and as `make scale-out` run it)
against the a2a-sdk 1.3.0, in memory and on PostgreSQL. Prints a table; asserts nothing.

    make bench-load        # installs wrk (apt-get) and .venv-interop, then runs this
    .venv/bin/python bench/load.py [--connections 16] [--seconds 10] [--warmup 2]
        [--ops get,list,send-blocking,send,pause-resume,stream]
        [--servers sdk-mem,sdk-pg,taskdeck-sqlite,taskdeck-pg] [--keep-db]
        [--server-env KEY=VALUE ...]

(`--servers sdk` means both SDK configurations, `taskdeck` both Taskdeck ones.) Needs wrk
(the Debian package), .venv-interop (`make interop-venv`: a2a-sdk[http-server,postgresql]),
PostgreSQL on 127.0.0.1:5432 (user postgres) and Redis on 127.0.0.1:6379.

Why wrk: a load generator in Python on the same cores spends about as much CPU per call
as the servers it measures, and what it takes from them hides what they cost. wrk (C,
epoll) drives each measurement: `wrk -t<T> -c<connections> -d<seconds>s --latency
--timeout 30s -s <script>`, T = 1, or one thread per port for the two-port Taskdeck (each
thread keeps to its port). Its Lua scripts are bench/wrk/*.lua; bench/load.py writes a
header for each run (the request body, the task ids, a fresh nonce) into a temporary
directory. Each operation on each server: --warmup seconds of the same load (not
counted), then the measured run.

The servers, one at a time (an idle server's pollers would otherwise take CPU from the
one being measured), each started, measured on every operation and stopped by the bench:
- sdk-mem: bench/sdk_server.py, the SDK's DefaultRequestHandler, InMemoryTaskStore and
  JSON-RPC app under uvicorn (one process), with .venv-interop/bin/python -I.
- sdk-pg: the same with the SDK's DatabaseTaskStore (SQLAlchemy async engine, asyncpg,
  default pool) on a fresh database `taskdeck_bench_sdk`: the persisting peer.
- taskdeck-sqlite: as `make run` starts it: `manage.py serve --port P --web 2 --workers 2`
  (two Daphnes sharing the port, two run_workers woken by the doorbell, polling every 1 s
  as a fallback, the scheduler), SQLite in a temporary directory, the in-memory channel
  layer and its local wake-ups (a2a/localwake.py). Its two web processes share the port
  and the kernel hands each of wrk's connections to whichever accepts first, so each run
  prints how they were split ("connections by web process 9/7"): at 16/0 one interpreter
  runs every call while the other idles, and the run measures that.
- taskdeck-pg: as `make scale-out`: `manage.py serve --port P1,P2 --workers 2` with
  DATABASE_URL on a fresh database `taskdeck_bench` and REDIS_URL redis db 5.
The servers start with an environment cleaned of every DJANGO_*, TASKDECK_*, DATABASE_URL
and REDIS_URL variable of the shell that runs the bench, so that a setting left there never
skews a run unseen; `--server-env KEY=VALUE` (repeatable) is how a run gives the Taskdeck
servers a setting (e.g. `--server-env TASKDECK_CALL_NICE=5`), and the command line printed
first shows it. Both Taskdeck servers run with DEBUG off (TASKDECK_DEBUG=0) and the
per-key task-creation limit off (TASKDECK_RATE_CREATE=0; its default, 120 a minute, would
refuse most sends), and are migrated and given an API key (`manage.py create_api_key`,
scopes read,write) sent as `Authorization: Bearer`. The SDK needs no auth. The bench's
databases are dropped at the end (not with --keep-db).

Operations, A2A 1.0 methods (`A2A-Version: 1.0`; one wrk request = one JSON-RPC call):
- get            GetTask, cycling through 100 completed tasks made before the runs.
- list           ListTasks {pageSize: 50}: a full page; each server holds the same number
                 of tasks then (100 + 2 x connections), as `list` runs before any send.
- send-blocking  SendMessage, blocking (1.0's default): answered with the completed task.
                 Taskdeck: skill `tck` (metadata.skill) with a `tck-complete-task-` message
                 id, whose agent answers "Hello from TCK" at once, run by a worker; the
                 SDK's executor does the same inline. Every request has a fresh messageId
                 (nonce per run + thread + counter): Taskdeck answers a repeated messageId
                 from the same caller with its first task (idempotent sends).
- send           the same with configuration.returnImmediately: Taskdeck answers
                 `submitted` and leaves the run to its workers (how long they took to
                 finish the backlog after the run is printed); the SDK answers after its
                 executor's first event.
- pause-resume   PauseTask and ResumeTask in turn on working tasks (`tck` with a non-`tck-`
                 message id stays working), 2 x connections of them, no task with two calls
                 in flight (bench/wrk/pause_resume.lua). Shown in pairs/s (= calls/s / 2);
                 p50/p99 are per call. The SDK has no pause: n/a, with what it answers.
- stream         SendStreamingMessage; the SSE answer ends when the task completes (both
                 servers end the chunked response then), and wrk's latency runs from
                 sending the request to the last event.

Errors: a JSON-RPC error comes back with HTTP 200, so the Lua `response` callback judges
every answer by its body: ok only with status 200, the operation's expected content (the
completed state, a page with pageSize 50, a task, the paused or working state...) and no
JSON-RPC error object. Each wrk thread counts ok and bad answers; `done()` sums them over
the threads (thread:get) and prints them with wrk's totals. errors = bad answers + wrk's
socket errors (connect, read, write, timeout); the first bad answer is printed. req/s
counts ok answers only, over wrk's run time; p50/p99 are wrk's latency distribution (all
answers). No separate pre-check: the set-up calls that make the task pools check their
answers (in Python), and a warm-up run without a single ok answer stops the bench.

CPU, from /proc (user + system, children included), over each measured run and, for
Taskdeck, until its job queue is empty (runs accepted with returnImmediately finish after
wrk stops): the server's processes (Taskdeck: `manage.py serve` and all it started; SDK:
uvicorn) plus the PostgreSQL backends connected to its database, per ok call ("CPU
ms/call") and in % of one core ("server %"); wrk's own ("wrk %"); and the rest of the
machine ("other %": the PostgreSQL server's own processes, Redis, anything else running
here; a busy machine shows there). Also printed: Redis's CPU per call for taskdeck-pg,
and each server's CPU when idle (Taskdeck's workers and scheduler poll), which the
slower operations' CPU ms/call carry.
The AG-UI projection's lag (Taskdeck only; docs/design/projection-after-commit.md, D8):
the servers project after each writer's commit, in a thread of each process (the
default), and the age of the oldest row of a2a_projectiondue is how far the live view is
behind. A sampler thread reads it from the server's database (Server.sql, a fresh
connection each time) every 0.5 s from the start of each measured run until the job queue
is empty; "lag max ms" is the largest sample, and the notes give each operation's max and
its last reading (after the run: what was left behind), with the most due rows seen.
Exit status 1 if a server fails to start or dies, or a setup call fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from _harness import (
    PG_ADMIN,
    REDIS,
    ROOT,
    clean_env,
    connections_by_process,
    drop_db,
    free_port,
    fresh_db,
    send_params,
    wait_for_port,
)

INTEROP_PY = ROOT / ".venv-interop" / "bin" / "python"
WRK_DIR = Path(__file__).resolve().parent / "wrk"
PG_BASE = PG_ADMIN.rsplit("/", 1)[0]
TD_DB, SDK_DB = "taskdeck_bench", "taskdeck_bench_sdk"
CLK = os.sysconf("SC_CLK_TCK")
DONE_POOL = 100  # completed tasks for GetTask

OPS = ("get", "list", "send-blocking", "send", "pause-resume", "stream")
LABELS = {
    "get": "GetTask",
    "list": "ListTasks (page of 50)",
    "send-blocking": "SendMessage blocking",
    "send": "SendMessage returnImmediately",
    "pause-resume": "PauseTask+ResumeTask (pairs)",
    "stream": "SendStreamingMessage",
}
SERVERS = ("sdk-mem", "sdk-pg", "taskdeck-sqlite", "taskdeck-pg")
SERVER_LABELS = {
    "sdk-mem": "a2a-sdk memory",
    "sdk-pg": "a2a-sdk PostgreSQL",
    "taskdeck-sqlite": "Taskdeck SQLite",
    "taskdeck-pg": "Taskdeck PG+Redis",
}
ALIASES = {"sdk": ("sdk-mem", "sdk-pg"), "taskdeck": ("taskdeck-sqlite", "taskdeck-pg")}

COMPLETED = '"state"%s*:%s*"TASK_STATE_COMPLETED"'
WANT = {  # Lua patterns an ok answer matches (bench/wrk/common.lua, judge)
    "get": '"result"%s*:%s*{%s*"id"%s*:%s*"',
    "list": '"pageSize"%s*:%s*50[^%d]',
    "send-blocking": COMPLETED,
    "send": '"result"%s*:%s*{%s*"task"%s*:%s*{',
    "stream": COMPLETED,
}


class Failure(Exception):
    """A set-up call that did not give the expected answer."""


class ServerDied(Exception):
    pass


# ---------------------------------------------------------------------------- servers


@dataclass
class Server:
    key: str
    ports: list[int]
    path: str
    headers: dict[str, str]
    proc: subprocess.Popen
    log: Path
    db: str = ""  # its PostgreSQL database (CPU of the backends, health, drain)
    sqlite: Path | None = None  # Taskdeck on SQLite: its database file
    done_tasks: list[str] = field(default_factory=list)
    working_tasks: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return SERVER_LABELS[self.key]

    @property
    def taskdeck(self) -> bool:
        return self.key.startswith("taskdeck")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.ports[0]}{self.path}"

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise ServerDied(f"{self.label} exited with {self.proc.returncode}; log: {self.log}")
        for pid in child_pids(self.log):  # serve takes a while to notice and stop the rest
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("gone", "Z"):
                raise ServerDied(f"{self.label}: its process {pid} died; log: {self.log}")

    def sql(self, query: str) -> list[tuple]:
        """Rows of a query on Taskdeck's database (a fresh connection each time, so the
        bench holds no backend that would count as the server's)."""
        if self.sqlite is not None:
            conn = sqlite3.connect(f"file:{self.sqlite}?mode=ro", uri=True, timeout=30)
            try:
                return conn.execute(query).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(f"{PG_BASE}/{self.db}", autocommit=True) as conn:
            return conn.execute(query).fetchall()

    def lag(self) -> tuple[float, int]:
        """The projection's lag in seconds (the age of the oldest due row; 0 when none) and
        the number of due rows: what a2a.health.projection_lag reads, in plain SQL."""
        oldest, rows = self.sql("SELECT min(at), count(*) FROM a2a_projectiondue")[0]
        if oldest is None:
            return 0.0, 0
        if isinstance(oldest, str):  # SQLite: naive UTC, as Django writes it
            oldest = datetime.fromisoformat(oldest).replace(tzinfo=UTC)
        return max(0.0, (datetime.now(UTC) - oldest).total_seconds()), rows

    def backlog(self) -> int:
        """Taskdeck jobs not yet run to the end (READY or RUNNING), plus runs held without a
        job: an inline agent's, in a web process (a2a/runtime/inline.py)."""
        jobs = self.sql(
            "SELECT count(*) FROM django_tasks_database_dbtaskresult "
            "WHERE status IN ('READY', 'RUNNING')"
        )[0][0]
        held = self.sql("SELECT count(*) FROM runtime_runlease WHERE owner <> ''")[0][0]
        return jobs + held

    def drain(self, timeout: float = 300) -> float:
        """Wait until Taskdeck's workers (and web processes) have run every queued job and
        held run; seconds it took."""
        start = time.monotonic()
        if not self.taskdeck:
            return 0.0
        while (left := self.backlog()) > 0:
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"{self.label}: {left} jobs or runs left after {timeout} s")
            self.check_alive()
            time.sleep(0.2)
        return time.monotonic() - start


def child_pids(log: Path) -> list[int]:
    """The pids `manage.py serve` printed ("(pids web-8001=123, ...)")."""
    try:
        found = re.search(r"\(pids (.*)\)", log.read_text(errors="replace"))
    except OSError:
        return []
    return [int(p) for p in re.findall(r"=(\d+)", found[1])] if found else []


def start_sdk(key: str, var: Path, running: list[Server]) -> Server:
    if not INTEROP_PY.exists():
        raise RuntimeError(f"{INTEROP_PY} is missing: run `make interop-venv`")
    port = free_port()
    log = var / f"{key}.log"
    cmd = [str(INTEROP_PY), "-I", str(ROOT / "bench" / "sdk_server.py"), "--port", str(port)]
    db = ""
    if key == "sdk-pg":
        db = SDK_DB
        fresh_db(db)
        cmd += ["--database-url", f"postgresql+asyncpg://postgres@127.0.0.1:5432/{db}"]
    with open(log, "w") as out:
        # cwd outside the repository; -I keeps its `a2a/` off the path
        proc = subprocess.Popen(
            cmd, cwd=var, env=clean_env(), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    server = Server(key=key, ports=[port], path="/", headers={}, proc=proc, log=log, db=db)
    running.append(server)
    wait_for_port(port, proc, "bench/sdk_server.py", timeout=60)
    return server


def start_taskdeck(key: str, var: Path, running: list[Server], settings: dict[str, str]) -> Server:
    """Migrate, make an API key, start `manage.py serve` (in `running` before waiting for
    it, so that it is stopped whatever happens next); `settings` (--server-env) go last."""
    home = var / key
    home.mkdir()
    env = {
        **clean_env(),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DJANGO_SECRET_KEY": "bench-only",
        "TASKDECK_VAR_DIR": str(home),
        "TASKDECK_DEBUG": "0",
        "TASKDECK_RATE_CREATE": "0",
        "TASKDECK_EXTRA_AGENTS": "a2a.runtime.agents.tck",  # the `tck` skill it drives
    }
    ports = [free_port()]
    db = ""
    if key == "taskdeck-pg":
        db = TD_DB
        fresh_db(db)
        env.update(DATABASE_URL=f"{PG_BASE}/{db}", REDIS_URL=REDIS)
        ports.append(free_port())
    env.update(settings)
    manage = [sys.executable, str(ROOT / "manage.py")]

    def command(*args: str) -> str:
        done = subprocess.run([*manage, *args], cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    command("migrate", "--noinput", "-v0")
    token = command("create_api_key", "bench-load", "--scopes", "read,write").split()[-1]
    log = var / f"{key}.log"
    # as `make run` (two web processes on one port) and `make scale-out` (one on each port);
    # wrk drives HTTP only, so no gRPC process
    web = "1" if key == "taskdeck-pg" else "2"
    cmd = [*manage, "serve", "--host", "127.0.0.1", "--port", ",".join(map(str, ports)),
           "--web", web, "--workers", "2", "--grpc-port", "0"]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(
        key=key,
        ports=ports,
        path="/a2a/",
        headers={"Authorization": f"Bearer {token}"},
        proc=proc,
        log=log,
        db=db,
        sqlite=None if db else home / "taskdeck.sqlite3",
    )
    running.append(server)
    for p in ports:
        wait_for_port(p, proc, "manage.py serve", timeout=90)
    return server


def stop(server: Server) -> None:
    """SIGTERM (serve stops its children itself), then SIGKILL; then any child of
    `manage.py serve` still alive (by the pids it printed), in case serve itself died."""
    if server.proc.poll() is None:
        server.proc.terminate()
    try:
        server.proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
    for pid in child_pids(server.log):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"manage.py" in cmdline or b"daphne" in cmdline:
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------- JSON-RPC set-up


def rpc_body(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


async def rpc(client, method: str, params: dict) -> dict:
    try:
        response = await client.post("", json=rpc_body(method, params))
    except Exception as exc:  # transport: refused, reset, timeout
        raise Failure(f"{method}: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise Failure(f"{method}: HTTP {response.status_code}: {response.text[:300]}")
    answer = response.json()
    if "error" in answer:
        raise Failure(f"{method}: {json.dumps(answer['error'])[:300]}")
    return answer["result"]


def client(server: Server, port: int | None = None):
    import httpx

    return httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port or server.ports[0]}{server.path}",
        headers={**server.headers, "A2A-Version": "1.0"},
        timeout=60,
    )


async def gather_limited(n: int, make, limit: int = 8) -> list:
    gate = asyncio.Semaphore(limit)

    async def one(i: int):
        async with gate:
            return await make(i)

    return await asyncio.gather(*(one(i) for i in range(n)))


async def setup(server: Server, connections: int) -> None:
    """DONE_POOL completed tasks (GetTask), then 2 x connections more: working ones for
    pause-resume on Taskdeck, completed ones on the SDK (so ListTasks pages through the
    same number of tasks on both)."""
    async with client(server) as c:

        async def done(i: int) -> str:
            r = await rpc(c, "SendMessage", send_params(f"tck-complete-task-setup-{uuid.uuid4()}"))
            if r.get("task", {}).get("status", {}).get("state") != "TASK_STATE_COMPLETED":
                raise Failure(f"{server.label}: SendMessage answered {json.dumps(r)[:300]}")
            return r["task"]["id"]

        async def working(i: int) -> str:
            r = await rpc(c, "SendMessage", send_params(f"bench-idle-{uuid.uuid4()}"))
            if r.get("task", {}).get("status", {}).get("state") != "TASK_STATE_WORKING":
                raise Failure(f"{server.label}: SendMessage answered {json.dumps(r)[:300]}")
            return r["task"]["id"]

        server.done_tasks = await gather_limited(DONE_POOL, done)
        extra = 2 * connections
        if server.taskdeck:
            server.working_tasks = await gather_limited(extra, working)
        else:
            await gather_limited(extra, done)


async def unpause(server: Server) -> None:
    """Resume any pool task a pause-resume run left paused (wrk stops with calls in
    flight), so that the next run starts with them all working."""
    async with client(server) as c:

        async def one(i: int) -> None:
            task_id = server.working_tasks[i]
            task = await rpc(c, "GetTask", {"id": task_id})
            if task["status"]["state"] != "TASK_STATE_WORKING":
                try:
                    await rpc(c, "ResumeTask", {"taskId": task_id})
                except Failure as exc:
                    # wrk closes its connections with calls in flight, and the server still
                    # runs them: a ResumeTask of the run may land between our read and ours
                    if "TASK_NOT_PAUSED" not in str(exc):
                        raise

        await gather_limited(len(server.working_tasks), one)


async def probe_pause(server: Server) -> str:
    """What a server without pause answers to PauseTask."""
    async with client(server) as c:
        try:
            await rpc(c, "PauseTask", {"taskId": server.done_tasks[0]})
        except Failure as exc:
            return str(exc)
    return "PauseTask answered without an error"


# ---------------------------------------------------------------------------- wrk


@dataclass
class Run:
    ok: int = 0
    bad: int = 0
    requests: int = 0
    seconds: float = 0.0
    p50: float = 0.0  # ms
    p99: float = 0.0
    socket_errors: int = 0
    non_2xx: int = 0
    wrk_rps: float = 0.0  # wrk's own Requests/sec (all answers)
    sample: str = ""
    wrk_cpu: float = 0.0  # seconds
    server_cpu: float = 0.0
    redis_cpu: float = 0.0
    machine_cpu: float = 0.0  # all cores, busy seconds
    window: float = 0.0  # seconds the CPU was measured over
    drain: float = 0.0
    lag_max: float | None = None  # seconds; Taskdeck's projection (LagSampler)
    lag_last: float | None = None
    due_max: int = 0
    split: list[int] = field(default_factory=list)  # wrk's connections by web process

    @property
    def errors(self) -> int:
        return self.bad + self.socket_errors

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0


def lua_value(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{lua_value(k)}] = {lua_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(lua_value(v) for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid Lua string literal here


def split_body(body: dict, marker: str = "@@X@@") -> list[str]:
    before, after = json.dumps(body, separators=(",", ":")).split(marker)
    return [before, after]


def write_script(server: Server, op: str, threads: int, connections: int, var: Path) -> Path:
    params: dict = {
        "host": "127.0.0.1",
        "ports": server.ports,
        "path": server.path,
        "headers": {**server.headers, "A2A-Version": "1.0"},
        "nonce": uuid.uuid4().hex[:12],
    }
    if op == "pause-resume":
        per = len(server.working_tasks) // threads
        params["pools"] = [server.working_tasks[i * per : (i + 1) * per] for i in range(threads)]
        body_file = "pause_resume.lua"
    else:
        params["want"] = WANT[op]
        body_file = "call.lua"
        if op == "get":
            params["ids"] = server.done_tasks
            params["body"] = split_body(rpc_body("GetTask", {"id": "@@X@@"}))
        elif op == "list":
            params["body"] = [json.dumps(rpc_body("ListTasks", {"pageSize": 50})), ""]
        else:
            params["id_prefix"] = "tck-complete-task-"
            method = "SendStreamingMessage" if op == "stream" else "SendMessage"
            sent = send_params("@@X@@", immediately=op == "send")
            params["body"] = split_body(rpc_body(method, sent))
    script = var / f"{server.key}-{op}-{params['nonce']}.lua"
    script.write_text(
        f"params = {lua_value(params)}\n"
        f"dofile({lua_value(str(WRK_DIR / 'common.lua'))})\n"
        f"dofile({lua_value(str(WRK_DIR / body_file))})\n"
    )
    return script


def wrk_command(server: Server, script: Path, connections: int, seconds: int) -> list[str]:
    threads = len(server.ports)
    return ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
            "--timeout", "30s", "-s", str(script), server.base]  # fmt: skip


def to_ms(number: str, unit: str) -> float:
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(text: str) -> Run:
    """wrk's report (Requests/sec, latency distribution, non-2xx, socket errors) and the
    line bench/wrk/common.lua's done() adds (ok and bad answers, run time)."""
    found = re.search(r"^BENCH ok=(\d+) bad=(\d+) requests=(\d+) duration_us=(\d+)", text, re.M)
    if not found:
        raise RuntimeError(f"wrk printed no BENCH line:\n{text}")
    run = Run(ok=int(found[1]), bad=int(found[2]), requests=int(found[3]))
    run.seconds = int(found[4]) / 1e6
    for pct, attr in (("50", "p50"), ("99", "p99")):
        if m := re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M):
            setattr(run, attr, to_ms(m[1], m[2]))
    if m := re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text
    ):
        run.socket_errors = sum(int(g) for g in m.groups())
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", text):
        run.non_2xx = int(m[1])
    if m := re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M):
        run.wrk_rps = float(m[1])
    if m := re.search(r"^BENCH-SAMPLE (.*)$", text, re.M):
        run.sample = m[1].strip()
    return run


def run_wrk(cmd: list[str], log: Path) -> tuple[Run, float]:
    """Run wrk; its parsed report and the CPU seconds it used (its own rusage)."""
    with open(log, "a") as out:
        out.write("$ " + shlex.join(cmd) + "\n")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(log, "a") as out:
        out.write(text + "\n")
    if proc.returncode:
        raise RuntimeError(f"wrk exited with {proc.returncode}:\n{text}")
    return parse_wrk(text), usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------- CPU from /proc


def proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, CPU ticks incl. reaped children, comm) for every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        table[int(entry.name)] = (int(fields[1]), ticks, comm)
    return table


def pg_backends(db: str) -> set[int]:
    """PostgreSQL backends connected to `db` ("postgres: USER DB HOST(PORT) STATE")."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry.name}/cmdline").read_bytes().split()
        except OSError:
            continue
        if len(words) >= 3 and words[0] == b"postgres:" and words[2] == db.encode():
            found.add(int(entry.name))
    return found


def machine_busy() -> int:
    """Busy ticks of all cores (/proc/stat: all but idle and iowait)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]


@dataclass
class CpuMark:
    at: float
    server: dict[int, int]
    redis: dict[int, int]
    machine: int


def cpu_mark(server: Server) -> CpuMark:
    table = proc_table()
    tree, todo = set(), [server.proc.pid]
    while todo:  # the server's process and all its descendants
        pid = todo.pop()
        tree.add(pid)
        todo += [p for p, (ppid, _, _) in table.items() if ppid == pid and p not in tree]
    if server.db:
        tree |= pg_backends(server.db)
    return CpuMark(
        at=time.monotonic(),
        server={p: table[p][1] for p in tree if p in table},
        redis={p: t for p, (_, t, comm) in table.items() if comm == "redis-server"},
        machine=machine_busy(),
    )


def cpu_between(a: dict[int, int], b: dict[int, int]) -> float:
    return sum(t - a.get(p, 0) for p, t in b.items()) / CLK


def idle_cpu(server: Server, seconds: float = 3) -> float:
    """% of one core the server uses doing nothing (Taskdeck's workers and scheduler poll)."""
    time.sleep(1)
    before = cpu_mark(server)
    time.sleep(seconds)
    after = cpu_mark(server)
    return cpu_between(before.server, after.server) / (after.at - before.at) * 100


# ---------------------------------------------------------------------------- measuring


class LagSampler(threading.Thread):
    """Reads Taskdeck's projection lag every PERIOD seconds until stopped."""

    PERIOD = 0.5

    def __init__(self, server: Server) -> None:
        super().__init__(name="lag-sampler", daemon=True)
        self.server = server
        self.stopping = threading.Event()
        self.samples: list[tuple[float, int]] = []
        self.failures = 0

    def run(self) -> None:
        while True:
            try:
                self.samples.append(self.server.lag())
            except Exception:  # a locked SQLite file, a refused connection: next time
                self.failures += 1
            if self.stopping.wait(self.PERIOD):
                return

    def stop(self, run: Run) -> None:
        """Stop, and put the max and a last reading (taken now) in `run`."""
        self.stopping.set()
        self.join()
        last = self.server.lag()
        samples = [*self.samples, last]
        run.lag_max = max(seconds for seconds, _ in samples)
        run.lag_last = last[0]
        run.due_max = max(rows for _, rows in samples)


def measure(server: Server, op: str, args, var: Path) -> Run:
    threads = len(server.ports)
    wrk_log = var / "wrk.log"
    if op == "pause-resume":
        server.drain()
        asyncio.run(unpause(server))
    if args.warmup:
        script = write_script(server, op, threads, args.connections, var)
        warm, _ = run_wrk(wrk_command(server, script, args.connections, args.warmup), wrk_log)
        server.check_alive()
        if warm.ok == 0:
            raise ServerDied(f"{server.label}: no {op} call ok in the warm-up: {warm.sample}")
        if op == "pause-resume":
            server.drain()
            asyncio.run(unpause(server))
    server.drain()
    script = write_script(server, op, threads, args.connections, var)
    before = cpu_mark(server)
    sampler = LagSampler(server) if server.taskdeck else None
    if sampler:
        sampler.start()
    split: list[int] = []
    counter = None
    if server.key == "taskdeck-sqlite":  # two web processes share its one port
        counter = threading.Thread(
            target=lambda: split.extend(connections_by_process(server.ports[0], args.connections)),
            daemon=True,
        )
        counter.start()
    try:
        command = wrk_command(server, script, args.connections, args.seconds)
        run, run.wrk_cpu = run_wrk(command, wrk_log)
        if counter is not None:
            counter.join()  # it reads once wrk's connections are up (within 10 s)
        run.split = split
        run.drain = server.drain()
    finally:
        if sampler:  # stopped before the CPU is read: its backends are not the server's
            sampler.stopping.set()
            sampler.join()
    after = cpu_mark(server)
    if sampler:
        sampler.stop(run)
    server.check_alive()
    run.window = after.at - before.at
    run.server_cpu = cpu_between(before.server, after.server)
    run.redis_cpu = cpu_between(before.redis, after.redis)
    run.machine_cpu = (after.machine - before.machine) / CLK
    return run


def lag_line(server: Server, runs: dict[str, Run]) -> str:
    """Each operation's projection lag: its max and its last reading, ms."""
    parts = [
        f"{op} max {run.lag_max * 1000:.0f}, last {run.lag_last * 1000:.0f} "
        f"({run.due_max} due rows at most)"
        for op, run in runs.items()
        if run.lag_max is not None and run.lag_last is not None
    ]
    return f"{server.label}: the AG-UI projection's lag, ms: " + "; ".join(parts)


def taskdeck_health(server: Server) -> list[str]:
    states = server.sql("SELECT state, count(*) FROM a2a_task GROUP BY state ORDER BY state")
    jobs = dict(
        server.sql(
            "SELECT status, count(*) FROM django_tasks_database_dbtaskresult GROUP BY status"
        )
    )
    text = server.log.read_text(errors="replace")
    tracebacks, http_5xx = text.count("Traceback"), len(re.findall(r'" 5\d\d ', text))
    return [
        f"{server.label}: tasks by state: " + ", ".join(f"{s} {n}" for s, n in states)
        + "; jobs: " + ", ".join(f"{s} {n}" for s, n in sorted(jobs.items()))
        + f"; its log: {tracebacks} tracebacks, {http_5xx} HTTP 5xx answers"
    ]  # fmt: skip


# ---------------------------------------------------------------------------- report

TIMES = "\u00d7"  # the multiplication sign
COLUMNS = (
    ("operation", 29, "<"),
    ("server", 18, "<"),
    ("req/s", 8, ">"),
    ("p50 ms", 8, ">"),
    ("p99 ms", 8, ">"),
    ("errors", 6, ">"),
    (TIMES + "SDK-mem", 8, ">"),
    (TIMES + "SDK-PG", 7, ">"),
    ("CPU ms/call", 11, ">"),
    ("lag max ms", 10, ">"),
    ("server %", 8, ">"),
    ("wrk %", 5, ">"),
    ("other %", 7, ">"),
)


def line(values: list[str]) -> str:
    return " ".join(
        f"{v:{align}{width}}" for v, (_, width, align) in zip(values, COLUMNS, strict=True)
    )


def table_row(op: str, key: str, run: Run | None, results: dict, first: bool) -> str:
    label = LABELS[op] if first else ""
    if run is None:
        return line([label, SERVER_LABELS[key], *["n/a"] * 6, *["-"] * 5])
    pairs = 2 if op == "pause-resume" else 1

    def ratio(base: str) -> str:
        other = results.get((op, base))
        if other is None or not other.rate or not run.rate:
            return "n/a"
        return f"{run.rate / other.rate:.2f}"

    window = run.window or 1
    other = max(run.machine_cpu - run.server_cpu - run.wrk_cpu, 0)
    return line(
        [
            label,
            SERVER_LABELS[key],
            f"{run.rate / pairs:.1f}",
            f"{run.p50:.1f}",
            f"{run.p99:.1f}",
            str(run.errors),
            ratio("sdk-mem"),
            ratio("sdk-pg"),
            f"{run.server_cpu / run.ok * 1000:.2f}" if run.ok else "-",
            "-" if run.lag_max is None else f"{run.lag_max * 1000:.0f}",
            f"{run.server_cpu / window * 100:.0f}",
            f"{run.wrk_cpu / window * 100:.0f}",
            f"{other / window * 100:.0f}",
        ]
    )


def machine_facts() -> list[str]:
    model = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
         if ln.startswith("model name")), platform.processor() or "?")  # fmt: skip
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return [
        f"machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), {model}, "
        f"{mem} MiB; {platform.system()} {platform.release()}; Python {platform.python_version()}",
        f"load generator: {wrk.strip()}",
        f"load average before the runs: {load}",
    ]


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="Operations: " + ", ".join(OPS) + ". Servers: " + ", ".join(SERVERS)
        + " (or sdk, taskdeck). See the top of bench/load.py.",
    )  # fmt: skip
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (16)")
    parser.add_argument("--seconds", type=int, default=10, help="measured seconds per op (10)")
    parser.add_argument("--warmup", type=int, default=2, help="uncounted seconds first (2)")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated, from: %(default)s")
    parser.add_argument("--servers", default=",".join(SERVERS), help="%(default)s")
    parser.add_argument(
        "--keep-db", action="store_true", help="leave the bench databases (and SQLite file)"
    )
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="KEY=VALUE",
        help="a setting for the Taskdeck servers (repeatable); they get nothing else from "
        "this shell's DJANGO_*/TASKDECK_* variables",
    )  # fmt: skip
    args = parser.parse_args()
    args.settings = {}
    for item in args.server_env:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            parser.error(f"--server-env wants KEY=VALUE with an upper-case KEY, not {item!r}")
        if name in ("DATABASE_URL", "REDIS_URL", "TASKDECK_VAR_DIR", "DJANGO_SETTINGS_MODULE"):
            parser.error(f"--server-env {name}: the bench chooses it for each server")
        args.settings[name] = value
    args.op_list = [o.strip() for o in args.ops.split(",") if o.strip()]
    wanted = set()
    bad = [o for o in args.op_list if o not in OPS]
    for name in (s.strip() for s in args.servers.split(",") if s.strip()):
        if name in ALIASES:
            wanted.update(ALIASES[name])
        elif name in SERVERS:
            wanted.add(name)
        else:
            bad.append(name)
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    args.server_list = [s for s in SERVERS if s in wanted]
    if args.connections < 2 or args.seconds < 1 or args.warmup < 0:
        parser.error("--connections must be at least 2, --seconds at least 1")
    if not shutil.which("wrk"):
        parser.error("wrk is not installed: apt-get install wrk (or `make bench-load`)")
    return args


def main() -> int:
    args = parse_args()

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    var = Path(tempfile.mkdtemp(prefix="taskdeck-bench-load-"))
    running: list[Server] = []
    made_dbs: set[str] = set()
    results: dict = {}
    notes: list[str] = []
    idle: list[str] = []  # CPU of each server doing nothing (pollers), % of one core
    redis: list[str] = []  # Redis CPU per ok call, taskdeck-pg
    status = 0
    print("$ " + shlex.join(sys.orig_argv))
    for fact in machine_facts():
        print(fact)
    print(
        f"wrk -c{args.connections} -d{args.seconds}s --latency --timeout 30s per operation and "
        f"server, after {args.warmup} s of the same load; -t1, or -t2 (one thread per port) "
        f"for Taskdeck PG+Redis; A2A 1.0 (A2A-Version: 1.0); logs and scripts in {var}",
        flush=True,
    )
    try:
        for key in args.server_list:
            if key.startswith("sdk"):
                server = start_sdk(key, var, running)
            else:
                server = start_taskdeck(key, var, running, args.settings)
            if server.db:
                made_dbs.add(server.db)
            asyncio.run(setup(server, args.connections))
            server.drain()
            idle.append(f"{server.label} {idle_cpu(server):.0f}%")
            for op in args.op_list:
                server.check_alive()
                if op == "pause-resume" and not server.taskdeck:
                    answer = asyncio.run(probe_pause(server))
                    results[(op, key)] = None
                    notes.append(f"{server.label} has no pause: {answer}")
                    print(f"  {server.label:<18} {op:<13} n/a", flush=True)
                    continue
                run = measure(server, op, args, var)
                results[(op, key)] = run
                print(
                    f"  {server.label:<18} {op:<13} {run.rate:8.1f} calls/s ok, {run.errors} "
                    f"errors; wrk: {run.wrk_rps:.1f} req/s, p50 {run.p50:.1f} ms, "
                    f"p99 {run.p99:.1f} ms; server CPU {run.server_cpu:.1f} s"
                    + (
                        f"; connections by web process {'/'.join(map(str, run.split))}"
                        if run.split
                        else ""
                    ),
                    flush=True,
                )
                if run.sample:
                    notes.append(f"{server.label}, {op}: first bad answer: {run.sample[:300]}")
                if op == "send" and server.taskdeck:
                    notes.append(
                        f"{server.label}, {op}: its workers finished the runs still queued "
                        f"when wrk stopped {run.drain:.1f} s later (counted in its CPU)"
                    )
                if key == "taskdeck-pg" and run.ok:
                    redis.append(f"{op} {run.redis_cpu / run.ok * 1000:.2f}")
                if run.ok == 0:
                    raise ServerDied(f"{server.label} answered no {op} call correctly")
            if server.taskdeck:
                notes += taskdeck_health(server)
                ran = {op: results[(op, key)] for op in args.op_list if results.get((op, key))}
                notes.append(lag_line(server, ran))
            running.remove(server)
            stop(server)
            if server.proc.returncode not in (0, -signal.SIGTERM):
                raise ServerDied(f"{server.label} exited with {server.proc.returncode}")
            if server.sqlite is not None and not args.keep_db:
                shutil.rmtree(server.sqlite.parent, ignore_errors=True)
        print()
        print(line([name for name, _, _ in COLUMNS]))
        for op in args.op_list:
            for i, key in enumerate(args.server_list):
                print(table_row(op, key, results.get((op, key)), results, first=i == 0))
        print(
            "\nreq/s: ok calls per second (PauseTask+ResumeTask: pairs per second); p50/p99: "
            f"per call;\n{TIMES}SDK-mem, {TIMES}SDK-PG: req/s over that SDK configuration's; "
            "errors: bad answers (HTTP status,\nJSON-RPC error, unexpected result) + socket "
            "errors; CPU ms/call: the server's processes and\ntheir PostgreSQL backends per ok "
            "call; server %, wrk %, other % (the rest of the machine):\nof one core, over the "
            "run (Taskdeck: and until its job queue was empty);\nlag max ms: the age of the "
            "oldest change not yet in the AG-UI live view, sampled every\n0.5 s over the "
            "same window (Taskdeck)"
        )
        print("- idle servers' CPU (3 s before the runs), % of one core: " + ", ".join(idle))
        if redis:
            print(
                "- Redis CPU per ok call of Taskdeck PG+Redis, ms (in other %, not in CPU "
                "ms/call): " + ", ".join(redis)
            )
        for note in notes:
            print("- " + note)
    except (ServerDied, Failure) as exc:
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
        for server in running:
            stop(server)
            code = server.proc.returncode
            if code not in (0, -signal.SIGTERM):
                print(f"{server.label} exited with {code}; log: {server.log}", file=sys.stderr)
                status = status or 1
        if not args.keep_db:
            for db in made_dbs:
                try:
                    drop_db(db)
                except Exception as exc:  # e.g. PostgreSQL was never reachable
                    print(f"could not drop {db}: {exc}", file=sys.stderr)
                    status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
