"""What one streaming send costs inside Taskdeck, through the real ASGI app and without a
server: SendStreamingMessage (A2A 1.0, JSON-RPC) to the conformance kit's agent (`tck`,
a `tck-complete-task-` message id: it answers at once, run inline in this process as the
web process runs it), the SSE body read to its end. CPU (this process, all threads),
queries (every thread's connections), thread hops (executor hand-offs of the event loop)
and SSE events per call. Prints figures; asserts nothing.

    .venv/bin/python bench/stream_costs.py [--scale-out] [--calls 100] [--binding jsonrpc|rest]
        [--blocking] (a blocking SendMessage the same way, to compare)
        [--profile]  (yappi over all threads, CPU time; SORT=ttot|tsub, TOP=45)
        [--sql]      (the statements of a call, by shape)

--scale-out uses PostgreSQL + Redis: a fresh database BENCH_PG_DB (default the harness's
`taskdeck_bench`, dropped at the end) and BENCH_REDIS_URL (default the harness's redis db 5).
The AG-UI projection runs as in production (TASKDECK_PROJECTION unset: its thread), so
its CPU is in the figure, as it is in a served process's.

The ASGI client here is a few lines (a scope, one request body, the response's chunks
gathered): what a Daphne adds (HTTP parsing, the socket) is not in the figure; compare
bench/load.py's "CPU ms/call" for the whole. Calls are made one at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import os
import re
import sys
import time

from _harness import REDIS, configure, drop_db, fresh_db, pg_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true", help="PostgreSQL + Redis")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--binding", default="jsonrpc", choices=("jsonrpc", "rest"))
    parser.add_argument(
        "--blocking", action="store_true", help="a blocking SendMessage instead, to compare"
    )
    parser.add_argument("--profile", action="store_true", help="yappi, all threads")
    parser.add_argument("--sql", action="store_true", help="print the statements of a call")
    args = parser.parse_args()
    configure(False)
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    if args.scale_out:  # a fresh database of the bench's (the harness's, or BENCH_PG_DB)
        db = os.environ.get("BENCH_PG_DB", "taskdeck_bench")
        fresh_db(db)
        os.environ.update(
            DATABASE_URL=pg_url(db), REDIS_URL=os.environ.get("BENCH_REDIS_URL", REDIS)
        )
    os.environ["TASKDECK_DEBUG"] = "0"
    os.environ["TASKDECK_RATE_CREATE"] = "0"
    os.environ.pop("TASKDECK_PROJECTION", None)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections
    from django.db.backends import utils

    call_command("migrate", verbosity=0)
    logging.getLogger("a2a.runtime.inline").setLevel(logging.ERROR)

    from a2a import api_keys
    from dashboard.asgi import application

    _, token = api_keys.create_key("bench", ["read", "write"])
    counting = [False]
    totals = collections.Counter()
    statements: collections.Counter = collections.Counter()
    execute = utils.CursorWrapper._execute_with_wrappers

    def counted(self, sql, params, many, executor):
        if counting[0]:
            totals["queries"] += 1
            if args.sql:
                shape = re.sub(r'"s\d+_x\d+"', "<sp>", re.sub(r"'[^']*'", "?", sql))
                statements[shape[:160]] += 1
        return execute(self, sql, params, many, executor)

    utils.CursorWrapper._execute_with_wrappers = counted
    run_in_executor = asyncio.BaseEventLoop.run_in_executor

    def hop(self, executor, func, *a):
        if counting[0]:
            totals["hops"] += 1
        return run_in_executor(self, executor, func, *a)

    asyncio.BaseEventLoop.run_in_executor = hop

    path = "/a2a/" if args.binding == "jsonrpc" else "/a2a/rest/message:stream"
    if args.blocking:
        path = "/a2a/" if args.binding == "jsonrpc" else "/a2a/rest/message:send"
    method = "SendMessage" if args.blocking else "SendStreamingMessage"

    def request(i: int) -> bytes:
        message = {
            "messageId": f"tck-complete-task-bench-{i}",
            "role": "ROLE_USER",
            "parts": [{"text": "go"}],
        }
        params = {"message": message, "metadata": {"skill": "tck"}}
        if args.binding == "jsonrpc":
            body = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        else:
            body = params
        return json.dumps(body).encode()

    async def call(i: int) -> bytes:
        body = request(i)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"authorization", f"Bearer {token}".encode()),
                (b"a2a-version", b"1.0"),
            ],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000),
        }
        sent = False
        done = asyncio.Event()
        chunks: list[bytes] = []

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.start":
                assert message["status"] == 200, message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    done.set()

        await application(scope, receive, send)
        return b"".join(chunks)

    def check(out: bytes) -> int:
        if args.blocking:
            assert b"TASK_STATE_COMPLETED" in out, out
            return 1
        events = [json.loads(line[6:]) for line in out.decode().split("\n") if line[:6] == "data: "]
        last = events[-1].get("result") or events[-1]
        state = json.dumps(last)
        assert "TASK_STATE_COMPLETED" in state, out
        return len(events)

    async def calls(first: int, n: int) -> int:
        events = 0
        for i in range(first, first + n):
            events += check(await call(i))
        return events

    async def measured() -> None:
        from agui import projection

        await calls(0, 10)  # warm-up
        await asyncio.to_thread(projection.project_due)  # the warm-up's rows, projected
        if args.profile:
            sys.path.insert(0, "/tmp/h3-yappi")
            import yappi

            yappi.set_clock_type("cpu")
            yappi.start()
        counting[0] = True
        cpu = time.process_time()
        wall = time.perf_counter()
        totals["events"] = await calls(10, args.calls)
        # the projector thread's passes for these calls: wait until it is idle
        await asyncio.sleep(0.3)
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
        counting[0] = False
        if args.profile:
            yappi.stop()
        n = args.calls
        mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
        what = "Blocking send" if args.blocking else "Streaming send"
        print(f"{what}, {args.binding}, {mode}, {n} calls one at a time")
        print(
            f"  CPU {cpu / n * 1000:.2f} ms/call (wall {wall / n * 1000:.1f} ms/call incl. 0.3 s"
            f" settle), queries {totals['queries'] / n:.1f}/call, thread hops "
            f"{totals['hops'] / n:.1f}/call, SSE events {totals['events'] / n:.1f}/call"
        )
        print(f"  load average {os.getloadavg()[0]:.2f}")
        for sql, k in sorted(statements.items(), key=lambda kv: -kv[1]):
            print(f"  {k / n:5.1f} x {sql}")
        if args.profile:
            stats = yappi.get_func_stats()
            stats.sort(os.environ.get("SORT", "ttot"))
            top = int(os.environ.get("TOP", "45"))
            for s in list(stats)[:top]:
                where = s.module.split("site-packages/")[-1].split("/stream-cpu/")[-1]
                name = f"{where}:{s.lineno} {s.name}"[-110:]
                per = (s.ncall / n, s.ttot / n * 1000, s.tsub / n * 1000)
                print("  {:8.1f} {:8.3f} {:8.3f}  ".format(*per) + name)
            tstats = yappi.get_thread_stats()
            for t in tstats:
                print(f"  thread {t.name:30s} {t.ttot / n * 1000:8.3f} ms/call")

    asyncio.run(measured())
    connections.close_all()
    if args.scale_out:
        drop_db(os.environ.get("BENCH_PG_DB", "taskdeck_bench"))


if __name__ == "__main__":
    main()
