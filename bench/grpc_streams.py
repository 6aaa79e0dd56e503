"""Many gRPC SubscribeToTask streams on one task (issue 31, item 2): GetTask latency on
`manage.py run_grpc` with 0 streams open, then with --streams (120) following one working
task, and the gRPC process's CPU % meanwhile. SQLite in a temporary var dir (no workers:
the task stays working, so the streams stay open). Prints figures; asserts nothing.

    .venv/bin/python bench/grpc_streams.py [--streams 120] [--calls 100] [--database URL]
        [--redis URL]

`--database postgres://…/NAME` (emptied first) and `--redis` run it on PostgreSQL + Redis,
where each poll is a round trip.

Measured (2 shared cores, load 3-7), the gRPC process's CPU with 120 streams: before the
shared reader (a2a/protocol/feed.py) 17 % on SQLite, 30 % on PostgreSQL + Redis; after,
5 % and 2 % (1 % with one stream). GetTask p50 1.5-2.6 ms with the streams, within 1 ms of
idle either way at this load (the issue saw 11 -> 304 ms on a loaded machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

from _harness import ROOT, configure, percentiles
from socket_burst import cpu_percent


def get_task_latencies(stub, pb, md, task_id: str, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        stub.GetTask(pb.GetTaskRequest(id=task_id), metadata=md)
        out.append(time.perf_counter() - started)
    return out


def drain(call) -> None:
    """Read a stream until it ends (or the bench cancels it)."""
    import grpc

    try:
        for _ in call:
            pass
    except grpc.RpcError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=120)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--database")
    parser.add_argument("--redis")
    args = parser.parse_args()
    configure(False)
    os.environ["TASKDECK_RATE_RESYNC"] = "0"  # each stream is a re-subscription of the key
    if args.database:
        from _harness import fresh_db

        fresh_db(args.database.rsplit("/", 1)[1])
        os.environ["DATABASE_URL"] = args.database
    if args.redis:
        os.environ["REDIS_URL"] = args.redis
    import django

    django.setup()
    import grpc
    from django.core.management import call_command

    from a2a import api_keys, services
    from a2a.grpc_door.protos import a2a_pb2 as pb
    from a2a.grpc_door.protos import a2a_pb2_grpc

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write", "operator"])
    actor = services.Actor("operator", "bench")
    msg = services.IncomingMessage(message_id="s-1", parts=[{"kind": "text", "text": "hi"}])
    task = services.create_task(msg, actor=actor, skill="batch")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "run_grpc", "--port", "0"],
        cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    address = line.rsplit(" ", 1)[1].strip()
    md = [("authorization", f"Bearer {token}")]
    where = "PostgreSQL" if args.database else "SQLite"
    print(f"gRPC streams on one task ({where}; load average {os.getloadavg()})")
    try:
        with grpc.insecure_channel(address) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            get_task_latencies(stub, pb, md, task.id, 10)  # warm
            idle = get_task_latencies(stub, pb, md, task.id, args.calls)
            print(f"GetTask, no stream: {percentiles(idle)}; CPU {cpu_percent(proc.pid, 2):.0f} %")
            calls = []
            for _ in range(args.streams):
                call = stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task.id), metadata=md)
                calls.append(call)
                threading.Thread(target=drain, args=(call,), daemon=True).start()
            time.sleep(3)  # every stream opened and following
            busy = get_task_latencies(stub, pb, md, task.id, args.calls)
            print(
                f"GetTask, {args.streams} streams on the task: {percentiles(busy)}; "
                f"CPU {cpu_percent(proc.pid, 2):.0f} %; "
                f"{sum(not c.done() for c in calls)} streams open at the end"
            )
            for call in calls:
                call.cancel()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
