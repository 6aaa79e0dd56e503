"""How long an editor waits for the ACP door to answer `initialize` (issue 30, item 4): the
remote door's relay (a2a/acp_door/relay.py, downloaded from the served /acp/relay.py and
run alone in a temporary directory with no Taskdeck or Django settings) against a served
Daphne, beside the local door (`manage.py acp`, which sets Django up). Prints figures;
asserts nothing.

    .venv/bin/python bench/acp_remote_start.py [--rounds 10] [--local-rounds 3] [--uv UV]

Each round: start the process, write `initialize` on its stdin, time until its answer
line is read on stdout (time.perf_counter(), process start included), close stdin, wait
for the exit. One warm-up round of each kind first, not counted (the OS's file cache).
`--uv PATH` also times `uv run http://…/acp/relay.py` (uv fetches the script each time
and installs `websockets` into its cache on the first run, which is the warm-up).
SQLite and the in-memory channel layer, one Daphne; the machine is shared: the load
average is printed with the figures.

Measured (2 shared cores, load average 8-10; uv 0.13.9): relay median 88 ms (min 82, max
122; n=10); `uv run <URL>` median 209 ms (min 140, max 527); `manage.py acp` median
1,792 ms (n=3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _harness import ROOT, clean_env, configure, free_port, start_server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def time_to_initialize(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=cwd,
    )  # fmt: skip
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{command[0]} exited: {proc.stderr.read().decode()[-500:]}")
            message = json.loads(line)
            if message.get("id") == 0:
                took = time.perf_counter() - started
                if "result" not in message:
                    raise RuntimeError(f"initialize refused: {message}")
                return took
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def figures(name: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    print(
        f"{name}: n={len(ms)} median={statistics.median(ms):.0f} ms "
        f"min={ms[0]:.0f} ms max={ms[-1]:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--local-rounds", type=int, default=3)
    parser.add_argument("--uv", default=None, help="a uv binary: also time `uv run <URL>`")
    args = parser.parse_args()
    env = configure(False)
    import django

    django.setup()
    from django.core.management import call_command

    from a2a import api_keys

    call_command("migrate", verbosity=0)
    _, key = api_keys.create_key("bench-editor", ["read", "write"])
    port = free_port()
    server = start_server(env, port)
    base = f"http://127.0.0.1:{port}"
    print(f"ACP door start-up to the initialize answer (SQLite; one Daphne on {base})")
    print(f"load average before: {os.getloadavg()}")
    try:
        alone = Path(tempfile.mkdtemp(prefix="relay-only-"))
        relay = alone / "taskdeck-acp.py"
        relay.write_bytes(httpx.get(base + "/acp/relay.py", timeout=30).content)
        relay_env = {**clean_env(), "TASKDECK_API_KEY": key}
        relay_env.pop("PYTHONPATH", None)
        command = [sys.executable, str(relay), "--server", base]
        print(f"relay: {' '.join(command)}  (cwd {alone}, no DJANGO_/TASKDECK_ settings)")
        time_to_initialize(command, relay_env, alone)  # warm-up
        figures("remote door (relay)", [
            time_to_initialize(command, relay_env, alone) for _ in range(args.rounds)
        ])  # fmt: skip
        if args.uv:
            uv = [args.uv, "run", "--quiet", base + "/acp/relay.py", "--server", base]
            time_to_initialize(uv, relay_env, alone)  # warm-up: resolves websockets once
            figures("remote door (uv run URL)", [
                time_to_initialize(uv, relay_env, alone) for _ in range(args.rounds)
            ])  # fmt: skip
        local = [sys.executable, str(ROOT / "manage.py"), "acp"]
        local_env = {**env, "TASKDECK_API_KEY": key}
        time_to_initialize(local, local_env, ROOT)  # warm-up
        figures("local door (manage.py acp)", [
            time_to_initialize(local, local_env, ROOT) for _ in range(args.local_rounds)
        ])  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
