"""Shared set-up for the benchmarks: a throwaway database, Django in this process, and a
Daphne server (plus workers if asked) in child processes against the same database.

`--scale-out` uses PostgreSQL + Redis (a fresh database `taskdeck_bench` and Redis db 5, or
BENCH_PG_DB and BENCH_REDIS_URL when set: benches run side by side must not share them),
otherwise SQLite and the in-memory channel layer, whose processes hear each other through the local
wake-ups in the temporary directory's wake/ (a2a/localwake.py).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH = "postgres://postgres@127.0.0.1:5432/taskdeck_bench"
REDIS = "redis://127.0.0.1:6379/5"


def clean_env() -> dict[str, str]:
    """This environment without anything that configures Taskdeck or Django."""
    drop = ("DJANGO", "TASKDECK", "DATABASE_URL", "REDIS_URL")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def configure(scale_out: bool) -> dict[str, str]:
    """Environment for this process and its children; call before django.setup()."""
    sys.path.insert(0, str(ROOT))
    env = {
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DJANGO_SECRET_KEY": "bench-only",
        "TASKDECK_VAR_DIR": tempfile.mkdtemp(prefix="taskdeck-bench-"),
        # the conformance kit's scripted agent (`tck`), which the benches drive
        "TASKDECK_EXTRA_AGENTS": "a2a.runtime.agents.tck",
        # one operator opening hundreds of sockets at once is what the fan-out and scale
        # benches measure, not what the per-tenant limit is for (bench/socket_burst.py
        # sets its own)
        "TASKDECK_RATE_SOCKET": "0",
        # and the load beside them is sends, not refusals: at the per-key limit's default
        # (120 new tasks a minute) all but the first 120 of `--load`'s blocking sends were
        # answered -32029 at once, and the fan-out was measured beside refusals
        "TASKDECK_RATE_CREATE": "0",
    }
    if scale_out:
        fresh_db(bench_db())
        env.update(
            DATABASE_URL=pg_url(bench_db()), REDIS_URL=os.environ.get("BENCH_REDIS_URL", REDIS)
        )
    os.environ.update(env)
    return dict(os.environ)


def bench_db() -> str:
    """The PostgreSQL database a `--scale-out` bench makes and drops: BENCH_PG_DB, or
    `taskdeck_bench`."""
    return os.environ.get("BENCH_PG_DB") or "taskdeck_bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_url(name: str) -> str:
    """The URL of database `name` on the benches' PostgreSQL server."""
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name


def fresh_db(name: str) -> None:
    """An empty PostgreSQL database `name` (dropped first if it exists, ending any session
    still connected to it)."""
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")


def db_exists(name: str) -> bool:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        return bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone())


def drop_db(name: str) -> None:
    """Drop PostgreSQL database `name`, closing this process's own connections first if
    Django is set up (WITH (FORCE) ends any other)."""
    import psycopg

    if "django" in sys.modules:
        from django.conf import settings

        if settings.configured:
            from django.db import connections

            connections.close_all()
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def drop_bench_db() -> None:
    """Drop the database that configure(scale_out=True) made."""
    drop_db(bench_db())


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    """Return once 127.0.0.1:port accepts connections; RuntimeError if `proc` exits first
    or the port stays closed for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:.0f} s")


def connections_by_process(port: int, expected: int, timeout: float = 10.0) -> list[int]:
    """How many established connections to `port` each server process holds (largest
    first), once `expected` are up (or `timeout` passed): read with `ss -tnp`. The web
    processes of `manage.py serve --web 2` share one listening socket, and a client that
    opens its connections at once (wrk) may find them all on one process, which then runs
    every call while the other idles: a run's figures depend on that split, so the benches
    that load a served port print it. Empty when `ss` is not installed."""
    if not shutil.which("ss"):
        return []
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(
            ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        counts: dict[str, int] = {}
        for pid in re.findall(r"pid=(\d+)", out):
            counts[pid] = counts.get(pid, 0) + 1
        if sum(counts.values()) >= expected or time.monotonic() > deadline:
            return sorted(counts.values(), reverse=True)
        time.sleep(0.05)


def served(env: dict[str, str]) -> dict[str, str]:
    """`env` for a served process: the AG-UI projection as production runs it (its default,
    a thread of the process: docs/design/projection-after-commit.md, D8), whatever the
    bench process itself runs (`sync` where it builds tasks and reads the view at once)."""
    return {k: v for k, v in env.items() if k != "TASKDECK_PROJECTION"}


def start_server(env: dict[str, str], port: int) -> subprocess.Popen:
    """Daphne serving the dashboard's ASGI app on `port` (the projection as `served` says)."""
    env = served(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "dashboard.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=open(Path(env["TASKDECK_VAR_DIR"]) / "daphne.log", "w"),  # noqa: SIM115
    )  # fmt: skip
    try:
        wait_for_port(port, proc, "daphne")
    except RuntimeError:
        proc.kill()
        raise
    return proc


def wait_for(predicate, timeout: float = 120.0):
    """Poll `predicate` every 10 ms until it returns something truthy (TimeoutError after
    `timeout` seconds); returns that value."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError("bench gave up waiting")
        time.sleep(0.01)
    return value


def quantile(ordered: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of an already sorted, non-empty list."""
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    ms = (quantile(ordered, 0.5) * 1000, quantile(ordered, 0.99) * 1000, ordered[-1] * 1000)
    return "n={} p50={:.1f} ms  p99={:.1f} ms  max={:.1f} ms".format(len(values), *ms)


def send_params(message_id: str, *, immediately: bool = False) -> dict:
    """A JSON-RPC SendMessage's params for the conformance kit's scripted agent (`tck`,
    which the benches turn on in `configure`): its message id picks what the agent does
    (e.g. `tck-complete-task-…` completes at once)."""
    params = {
        "message": {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": "bench"}]},
        "metadata": {"skill": "tck"},
    }
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    return params
