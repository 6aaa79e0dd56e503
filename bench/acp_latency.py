"""ACP door latency, measured through the official ACP Python SDK client (`acp`): prompt ->
first session/update, and session/suspend -> the `suspended` update. Prints figures;
asserts nothing.

    .venv/bin/python bench/acp_latency.py [--rounds 50] [--warmup 2] [--scale-out | --both]

Set-up, started and stopped by the bench (also on Ctrl+C or an error):
- a throwaway database: SQLite in a temporary TASKDECK_VAR_DIR and the in-memory channel
  layer (default), or with --scale-out PostgreSQL `taskdeck_bench_acp` (created here,
  dropped at the end) + Redis at REDIS_URL (default redis://127.0.0.1:6379/0); --both runs
  one after the other. `manage.py migrate`, an API key from `manage.py create_api_key`;
- two `manage.py db_worker --interval 0.05` and `manage.py run_scheduler --interval 0.1`,
  with TASKDECK_AGENT_DELAY_SCALE=0.05 (a batch item takes 25 ms), DEBUG off;
- `manage.py acp`, spawned by the SDK's spawn_agent_process with TASKDECK_API_KEY in its
  environment; the client opts in to the seed's update kinds (`suspended`, `resumed`).

Each round: session/new (mode `batch`, 200 items), session/prompt; wait for the worker's
`in_progress` update; session/suspend (mode finish_step); session/cancel; wait for the
prompt's answer; session/close. Times are time.perf_counter() in the client's event loop,
taken when a notification is handled (or a response awaited). --warmup rounds (default 2)
are run first and not counted. What each figure includes is printed with the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _harness import ROOT, quantile

MANAGE = str(ROOT / "manage.py")
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_DB = "taskdeck_bench_acp"
PG_BENCH = f"postgres://postgres@127.0.0.1:5432/{PG_DB}"
DELAY_SCALE = "0.05"
ITEMS = 200
WAIT = 60.0  # seconds any one step of a round may take before the bench gives up
CLOSE_WAIT = 3.0  # session/close normally answers in milliseconds (see `hung_closes`)
OPS = [
    ("first", "prompt → first session/update"),
    ("started", "prompt → worker's in_progress update"),
    ("pickup", "  of which created → `started` stamped"),
    ("heard", "  of which `started` stamped → client"),
    ("suspend_rtt", "session/suspend round trip"),
    ("suspended", "suspend → `suspended` update"),
    ("stamped", "  of which sent → `paused` stamped"),
    ("told", "  of which `paused` stamped → client"),
    ("turn_end", "suspend → prompt answered"),
]


class BenchFailed(Exception):
    pass


class Interrupted(Exception):
    """Ctrl+C (or SIGTERM) while the client's event loop ran."""


@dataclass
class Backend:
    name: str
    scale_out: bool
    var: Path
    env: dict[str, str]
    procs: list[subprocess.Popen] = field(default_factory=list)
    made_db: bool = False


@dataclass
class Results:
    times: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k, _ in OPS})
    first_kinds: dict[str, int] = field(default_factory=dict)
    stop_reasons: dict[str, int] = field(default_factory=dict)
    update_before_answer: int = 0
    handle_mismatch: int = 0
    hung_closes: int = 0
    rounds: int = 0
    # per round: task id and wall-clock times (time.time()) at the client, for breakdown()
    walls: list[dict[str, Any]] = field(default_factory=list)


# ---------------------------------------------------------------------------- processes


def child_env(var: Path, scale_out: bool, redis_url: str) -> dict[str, str]:
    """The environment of every process the bench starts (the ACP process gets it whole:
    the SDK would otherwise pass only HOME, PATH and a few more)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "TASKDECK_API_KEY", "TASKDECK_PRODUCTION")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DJANGO_SECRET_KEY="bench-only",
        TASKDECK_DEBUG="0",
        TASKDECK_VAR_DIR=str(var),
        TASKDECK_AGENT_DELAY_SCALE=DELAY_SCALE,
        PYTHONUNBUFFERED="1",
    )
    if scale_out:
        env.update(DATABASE_URL=PG_BENCH, REDIS_URL=redis_url)
    return env


def manage(backend: Backend, *args: str) -> str:
    """Run a management command to its end; its stdout, or BenchFailed with its output."""
    done = subprocess.run(
        [sys.executable, MANAGE, *args],
        cwd=ROOT,
        env=backend.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise BenchFailed(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def start(backend: Backend, name: str, *args: str) -> None:
    """A long-running manage.py command, in its own session (Ctrl+C reaches the bench only;
    the bench stops it), its output in a log file. Appended before anything can fail."""
    with open(backend.var / f"{name}.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, MANAGE, *args],
            cwd=ROOT,
            env=backend.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    backend.procs.append(proc)


def set_up(scale_out: bool, redis_url: str) -> Backend:
    var = Path(tempfile.mkdtemp(prefix="taskdeck-bench-acp-"))
    name = "PostgreSQL + Redis" if scale_out else "SQLite + in-memory layer"
    backend = Backend(name, scale_out, var, child_env(var, scale_out, redis_url))
    return backend


def start_backend(backend: Backend) -> str:
    """Database, migrations, API key, workers and scheduler; returns the key's token."""
    if backend.scale_out:
        import psycopg
        import redis

        redis.Redis.from_url(backend.env["REDIS_URL"], socket_connect_timeout=2).ping()
        backend.made_db = True
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {PG_DB}")
    manage(backend, "migrate", "-v0")
    token = manage(backend, "create_api_key", "bench-acp", "--scopes", "read,write,agent")
    token = token.strip().splitlines()[-1].strip()
    for i in range(2):
        start(backend, f"worker-{i}", "run_worker", "--interval", "0.05", "--no-startup-delay",
              "--no-reload")  # fmt: skip
    start(backend, "scheduler", "run_scheduler", "--interval", "0.1")
    return token


def check_alive(backend: Backend) -> None:
    for proc in backend.procs:
        if proc.poll() is not None:
            raise BenchFailed(
                f"{shlex.join(proc.args[2:4])} exited with {proc.returncode}; logs: {backend.var}"
            )


def stop_backend(backend: Backend) -> list[str]:
    """SIGTERM, then SIGKILL after 15 s; drop the PostgreSQL database. Returns problems."""
    problems = []
    for proc in backend.procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in backend.procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            problems.append(f"{shlex.join(proc.args[2:4])} did not stop on SIGTERM; killed")
    if backend.made_db:
        try:
            import psycopg

            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
        except Exception as exc:
            problems.append(f"could not drop {PG_DB}: {exc}")
    return problems


def breakdown(backend: Backend, r: Results) -> None:
    """Split two figures at the event's own timestamp (TaskEvent.created_at: the writer's
    clock, taken in its transaction just before the commit; same machine, same clock)."""
    ids = [w["task"] for w in r.walls if w["task"]]
    if not ids:
        return
    query = (
        "SELECT task_id, kind, created_at FROM a2a_taskevent WHERE kind IN "
        "('created', 'started', 'paused') AND task_id IN ({}) ORDER BY id"
    )
    if backend.scale_out:
        import psycopg

        with psycopg.connect(PG_BENCH) as conn:
            rows = conn.execute(query.format(", ".join(["%s"] * len(ids))), ids).fetchall()
        stamp = {(t, k): at.timestamp() for t, k, at in rows}
    else:
        import sqlite3

        conn = sqlite3.connect(backend.var / "taskdeck.sqlite3")
        try:
            rows = conn.execute(query.format(", ".join("?" * len(ids))), ids).fetchall()
        finally:
            conn.close()
        stamp = {
            (t, k): datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp() for t, k, at in rows
        }
    for w in r.walls:
        task = w["task"]
        created, started = stamp.get((task, "created")), stamp.get((task, "started"))
        paused = stamp.get((task, "paused"))
        if created and started:
            r.times["pickup"].append(started - created)
            r.times["heard"].append(w["started"] - started)
        if paused:
            r.times["stamped"].append(paused - w["suspend"])
            r.times["told"].append(w["suspended"] - paused)


def tracebacks(backend: Backend) -> dict[str, int]:
    found = {}
    for log in sorted(backend.var.glob("*.log")):
        n = log.read_text(errors="replace").count("Traceback")
        if n:
            found[log.name] = n
    return found


# ---------------------------------------------------------------------------- the client


class BenchClient:
    """The Client side the SDK calls into. The bench's rounds ask nothing of it; updates
    are taken raw by Wire (the SDK's typed route refuses the seed's kinds)."""

    async def request_permission(self, session_id, tool_call, options, **kw):
        from acp import schema as s

        return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))

    async def create_elicitation(self, message, mode, **kw):
        from acp import schema as s

        return s.DeclineElicitationResponse(action="decline")

    async def session_update(self, session_id, update, **kw):
        pass

    async def read_text_file(self, *a, **kw):
        from acp import RequestError

        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *a, **kw):
        from acp import RequestError

        raise RequestError.method_not_found("fs/write_text_file")


@dataclass
class Waiter:
    sid: str
    match: Callable[[dict[str, Any]], bool]
    future: asyncio.Future


class Wire:
    """Raw JSON-RPC over the SDK's connection, and every session/update timestamped the
    moment its handler runs."""

    def __init__(self, conn) -> None:
        from acp.router import Route

        self.rpc = conn._conn  # the SDK's JSON-RPC Connection (as tests/acp_door/peer.py)
        self.waiters: list[Waiter] = []
        router = self.rpc._handler
        router.add_route(Route(method="session/update", func=self._update, kind="notification"))
        router.add_route(
            Route(method="session/await_resumption", func=self._parked, kind="request")
        )

    async def _update(self, params: Any) -> None:
        now, wall = time.perf_counter(), time.time()
        sid = (params or {}).get("sessionId")
        update = (params or {}).get("update") or {}
        for w in list(self.waiters):
            if w.sid == sid and not w.future.done() and w.match(update):
                w.future.set_result((now, wall, update))
                self.waiters.remove(w)

    async def _parked(self, params: Any) -> dict:
        return {}

    def expect(self, sid: str, match: Callable[[dict[str, Any]], bool]) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.waiters.append(Waiter(sid, match, future))
        return future

    async def call(self, method: str, params: Any, timeout: float = WAIT) -> Any:
        try:
            return await asyncio.wait_for(self.rpc.send_request(method, params), timeout)
        except TimeoutError:
            raise BenchFailed(f"{method}: no answer within {timeout:.0f} s") from None

    async def notify(self, method: str, params: Any) -> None:
        await self.rpc.send_notification(method, params)


async def within(future: asyncio.Future, what: str) -> Any:
    try:
        return await asyncio.wait_for(future, WAIT)
    except TimeoutError:
        raise BenchFailed(f"no {what} within {WAIT:.0f} s") from None


def is_kind(kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda u: (
        u.get("sessionUpdate") == kind and all(u.get(k) == v for k, v in fields.items())
    )


async def one_round(wire: Wire, results: Results | None) -> None:
    sid = (await wire.call("session/new", {"cwd": str(ROOT), "mcpServers": []}))["sessionId"]
    await wire.call("session/set_mode", {"sessionId": sid, "modeId": "batch"})
    first = wire.expect(sid, lambda u: True)
    started = wire.expect(sid, is_kind("tool_call_update", status="in_progress"))
    params = {
        "sessionId": sid,
        "prompt": [{"type": "text", "text": "Re-render 200 thumbnails"}],
        "_meta": {"taskdeck/metadata": {"items": ITEMS, "pace": 1}},
    }

    async def timed(coro) -> tuple[float, Any]:
        out = await coro
        return time.perf_counter(), out

    t_prompt = time.perf_counter()
    prompt = asyncio.ensure_future(timed(wire.call("session/prompt", params, timeout=WAIT * 3)))
    try:
        t_first, _, u_first = await within(first, "first session/update")
        t_started, w_started, _ = await within(started, "in_progress update (is it running?)")
        if prompt.done():
            raise BenchFailed(f"the prompt ended before the suspend: {prompt.result()[1]!r}")
        suspended = wire.expect(sid, is_kind("suspended"))
        w_suspend, t_suspend = time.time(), time.perf_counter()
        answer = await wire.call(
            "session/suspend", {"sessionId": sid, "reason": "bench", "mode": "finish_step"}
        )
        t_answer = time.perf_counter()
        t_suspended, w_suspended, u_suspended = await within(suspended, "`suspended` update")
        await wire.notify("session/cancel", {"sessionId": sid})
        t_end, outcome = await asyncio.wait_for(prompt, WAIT)
    finally:
        if not prompt.done():
            prompt.cancel()
            await asyncio.wait({prompt})  # its outcome is dropped; our own cancel is not
    # the live follower of a closed session stops polling; its task stays suspended
    try:
        await wire.call("session/close", {"sessionId": sid}, timeout=CLOSE_WAIT)
        hung = False
    except BenchFailed:
        hung = True
    if results is None:
        return
    results.hung_closes += hung
    results.walls.append(
        {
            "task": (u_first.get("rawInput") or {}).get("taskId"),
            "started": w_started,
            "suspend": w_suspend,
            "suspended": w_suspended,
        }
    )
    results.rounds += 1
    for key, value in (
        ("first", t_first - t_prompt),
        ("started", t_started - t_prompt),
        ("suspend_rtt", t_answer - t_suspend),
        ("suspended", t_suspended - t_suspend),
        ("turn_end", t_end - t_suspend),
    ):
        results.times[key].append(value)
    label = f"{u_first.get('sessionUpdate')} ({u_first.get('status', '-')})"
    results.first_kinds[label] = results.first_kinds.get(label, 0) + 1
    stop = (outcome or {}).get("stopReason", "?")
    results.stop_reasons[stop] = results.stop_reasons.get(stop, 0) + 1
    results.update_before_answer += t_suspended < t_answer
    results.handle_mismatch += u_suspended.get("handle") != answer.get("handle")


async def client(backend: Backend, token: str, rounds: int, warmup: int) -> Results:
    from acp import PROTOCOL_VERSION, spawn_agent_process

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    interrupted = []

    def on_signal() -> None:  # first Ctrl+C: unwind (closing the agent); later ones: ignored
        if not interrupted:
            interrupted.append(True)
            main.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    env = {**backend.env, "TASKDECK_API_KEY": token}
    results = Results()
    try:
        with open(backend.var / "acp.log", "ab") as stderr:
            async with spawn_agent_process(
                BenchClient(),
                sys.executable,
                MANAGE,
                "acp",
                env=env,
                cwd=str(ROOT),
                use_unstable_protocol=True,
                transport_kwargs={"stderr": stderr},
            ) as (conn, proc):
                wire = Wire(conn)
                caps = {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "_meta": {"taskdeck/suspend": {"updates": True, "awaitResumption": True}},
                }
                init = await wire.call(
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSION,
                        "clientCapabilities": caps,
                        "clientInfo": {"name": "taskdeck-bench", "version": "1"},
                    },
                )
                if "taskdeck/suspend" not in init.get("agentCapabilities", {}).get("_meta", {}):
                    raise BenchFailed(f"the agent does not offer taskdeck/suspend: {init!r}")
                for i in range(warmup + rounds):
                    check_alive(backend)
                    if proc.returncode is not None:
                        raise BenchFailed(f"manage.py acp exited with {proc.returncode}")
                    await one_round(wire, results if i >= warmup else None)
    except asyncio.CancelledError:
        if interrupted:
            raise Interrupted from None
        raise
    except (ConnectionError, BrokenPipeError) as exc:
        raise BenchFailed(f"lost manage.py acp ({exc!r}); see {backend.var / 'acp.log'}") from None
    return results


# ---------------------------------------------------------------------------- report


def facts_line() -> str:
    model = ""
    with contextlib.suppress(OSError):
        found = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
        model = f" ({found[1].strip()})" if found else ""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"machine: {os.cpu_count()} CPUs{model}, {usable} usable; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; Python {platform.python_version()}; "
        f"{platform.system()} {platform.release()}; agent-client-protocol "
        f"{version('agent-client-protocol')}"
    )


def backend_facts(backend: Backend) -> str:
    if not backend.scale_out:
        return f"SQLite {__import__('sqlite3').sqlite_version}, in-memory channel layer"
    import psycopg
    import redis

    with psycopg.connect(PG_ADMIN) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
    info = redis.Redis.from_url(backend.env["REDIS_URL"]).info("server")
    return f"PostgreSQL {pg} ({PG_DB}), Redis {info['redis_version']} ({backend.env['REDIS_URL']})"


def table(backend: Backend, r: Results) -> list[str]:
    lines = [f"{'operation':<38} {'n':>4} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}   (ms)"]
    for key, label in OPS:
        values = sorted(r.times[key])
        if not values:
            continue
        qs = [quantile(values, q) * 1000 for q in (0.5, 0.9, 0.99)] + [values[-1] * 1000]
        lines.append(f"{label:<38} {len(values):>4} " + " ".join(f"{q:>8.1f}" for q in qs))
    kinds = ", ".join(f"{k} x{n}" for k, n in r.first_kinds.items())
    stops = ", ".join(f"{k} x{n}" for k, n in r.stop_reasons.items())
    lines += [
        f"first update seen: {kinds}; prompt answers: {stops}",
        f"`suspended` update handled before the suspend answer in {r.update_before_answer} of "
        f"{r.rounds} rounds; handle differed from the answer's in {r.handle_mismatch}",
    ]
    if r.hung_closes:
        lines.append(
            f"session/close gave no answer within {CLOSE_WAIT:.0f} s in {r.hung_closes} of "
            f"{r.rounds} rounds (not timed; the bench went on)"
        )
    return lines


def notes(poll: str) -> str:
    return f"""
What each figure includes (client timestamps: time.perf_counter() in the client's event
loop, taken when the SDK runs the notification's handler or the awaited response returns):
- prompt → first session/update: the door creates the task in one transaction (task,
  `created` event, job queued), pokes its own session follower, which reads the log and
  sends the task's tool_call (pending). All inside the ACP process: no worker, no channel
  layer, no poll; two pipe hops, a write and a read.
- prompt → worker's in_progress update: an idle worker is woken by the job's doorbell
  (it also polls every 0.05 s), commits `started`, and the ACP process hears of it at
  once: through Redis, or with the in-memory layer through the local wake-ups
  (a2a/localwake.py); its own poll (TASKDECK_ACP_POLL_SECONDS, here {poll} s) is only
  the fallback.
  Split at the `started` event's timestamp (TaskEvent.created_at, the writer's clock just
  before its commit; one machine, one clock): the worker's part, then the door's.
- session/suspend round trip: the door validates, pause_task commits the state change and
  the `paused` event, and answers {{handle, reason, suspendedAt, summary}}.
- suspend → `suspended` update: the pause commits in the ACP process, which pokes its
  follower; it is not waiting for the worker (finish_step: the worker lets go at its
  step's end; that is bench/pause_latency.py's figure). Concurrent worker writes can
  delay the commit (SQLite has one writer at a time). Split at the `paused` event's
  timestamp: the request's way in and the write, then commit → follower → client.
- suspend → prompt answered: the turn ends (end_turn) when the follower renders `paused`;
  the session/cancel sent after it then has no turn to cancel, and each round's task stays
  suspended (holding no worker); session/close stops the session's follower (it is
  not timed; one that gives no answer within {CLOSE_WAIT:.0f} s is counted and skipped).
With n < 100, p99 is the largest value but one at most (nearest rank)."""


# ---------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="measured rounds (50)")
    parser.add_argument("--warmup", type=int, default=2, help="uncounted rounds first (2)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--scale-out", action="store_true", help="PostgreSQL + Redis")
    group.add_argument("--both", action="store_true", help="SQLite, then PostgreSQL + Redis")
    args = parser.parse_args()
    if args.rounds < 1 or args.warmup < 0:
        parser.error("--rounds must be at least 1, --warmup at least 0")
    redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    poll = os.environ.get("TASKDECK_ACP_POLL_SECONDS", "0.25")
    modes = [False, True] if args.both else [args.scale_out]

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    print(f"command: {shlex.join(sys.orig_argv)}")
    print(facts_line())
    print(
        f"ACP latency through the official SDK client: {args.rounds} rounds after "
        f"{args.warmup} warm-up; 2 db_workers (poll 0.05 s), scheduler (0.1 s), agent delay "
        f"scale {DELAY_SCALE} (batch item 25 ms), ACP poll {poll} s, DEBUG off",
        flush=True,
    )
    status = 0
    for scale_out in modes:
        backend = set_up(scale_out, redis_url)
        ok = False
        try:
            token = start_backend(backend)
            print(f"\n== {backend.name}: {backend_facts(backend)}", flush=True)
            results = asyncio.run(client(backend, token, args.rounds, args.warmup))
            breakdown(backend, results)
            print("\n".join(table(backend, results)))
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            ok = True
        except (Interrupted, KeyboardInterrupt):
            print("interrupted", file=sys.stderr)
            status = 130
        except (BenchFailed, OSError, subprocess.SubprocessError) as exc:
            print(f"bench failed ({backend.name}): {exc}", file=sys.stderr)
            status = 1
        except Exception as exc:  # e.g. PostgreSQL or Redis unreachable
            print(f"bench failed ({backend.name}): {exc!r}", file=sys.stderr)
            status = 1
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not skip this
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            for problem in stop_backend(backend):
                print(problem, file=sys.stderr)
                status = status or 1
            if found := tracebacks(backend):
                print(f"tracebacks in the logs: {found} (kept in {backend.var})", file=sys.stderr)
                ok = False
            if ok:
                shutil.rmtree(backend.var, ignore_errors=True)
            elif status:
                print(f"logs kept in {backend.var}", file=sys.stderr)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, on_term)
        if status:
            break
    if status == 0:
        print(notes(poll))
    return status


if __name__ == "__main__":
    sys.exit(main())
