"""Blocking send latency: a 1.0 SendMessage (blocking) to an agent that answers at once,
request sent -> completed task received, against `manage.py serve` (what `make run` runs:
Daphne, 2 worker processes and the scheduler). Sequential sends, then a few concurrent
ones. Prints figures; asserts nothing.

    .venv/bin/python bench/send_latency.py [--scale-out] [--sends 50] [--concurrent 10]

The time is the whole round trip: the request commits the task and its job, a worker
learns of the job, runs the agent (the conformance agent, `tck-complete-task-…`), commits
the completion, and the waiting request learns of it and answers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _harness import ROOT, configure, free_port, percentiles, wait_for_port


def start_serve(env: dict[str, str], port: int) -> subprocess.Popen:
    log = open(Path(env["TASKDECK_VAR_DIR"]) / "serve.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port), "--workers", "2",
         "--grpc-port", "0"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for_port(port, proc, "serve")
    except RuntimeError:
        proc.kill()
        raise
    return proc


async def send(client, token: str) -> float:
    message = {
        "messageId": f"tck-complete-task-{uuid.uuid4().hex}",
        "role": "ROLE_USER",
        "parts": [{"text": "bench"}],
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message, "metadata": {"skill": "tck"}},
    }
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    started = time.perf_counter()
    response = await client.post("/a2a/", json=body, headers=headers)
    took = time.perf_counter() - started
    state = response.json()["result"]["task"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"the send did not settle as completed: {state}")
    return took


async def measure(base: str, token: str, sends: int, concurrent: int) -> tuple[list, list]:
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for _ in range(3):  # warm-up: connections, imports, the agent registry
            await send(client, token)
        sequential = [await send(client, token) for _ in range(sends)]
        parallel: list[float] = []
        for _ in range(max(1, sends // max(1, concurrent))):
            parallel += await asyncio.gather(*(send(client, token) for _ in range(concurrent)))
    return sequential, parallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--sends", type=int, default=50)
    parser.add_argument("--concurrent", type=int, default=10)
    args = parser.parse_args()
    env = configure(args.scale_out)
    env["TASKDECK_RATE_CREATE"] = "0"  # the bench creates more tasks a minute than a client
    os.environ.update(env)

    import django

    django.setup()
    from django.core.management import call_command

    from a2a import api_keys

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write"])
    port = free_port()
    server = start_serve(env, port)
    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"Blocking SendMessage latency ({mode}; manage.py serve --workers 2)")
    try:
        sequential, parallel = asyncio.run(
            measure(f"http://127.0.0.1:{port}", token, args.sends, args.concurrent)
        )
        print(f"one at a time: send -> completed task  {percentiles(sequential)}")
        print(f"{args.concurrent:>3} at a time: send -> completed task  {percentiles(parallel)}")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
