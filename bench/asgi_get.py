"""GetTask through Taskdeck's ASGI application in this process, without an HTTP server:
CPU per call of Django, the protocol handler, the thread hop and the queries alone.
Prints figures; asserts nothing.

    .venv/bin/python bench/asgi_get.py [--scale-out] [--calls 3000] [--concurrent 16]

Compare with bench/load.py's GetTask "CPU ms/call" for the same database: what the live
server spends beyond this figure is the HTTP server's and what concurrency costs (issue 14
found 2.5 ms here against 4.3-6.2 ms in the live web process on SQLite, an open question).
The calls go through `dashboard.asgi.application` as a server would call it (scope,
receive, send), with an API key, on a throwaway database with 100 tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from _harness import configure


async def call(application, scope: dict, body: bytes) -> int:
    sent = False

    async def receive() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    status = 0
    answer = b""

    async def send(message: dict) -> None:
        nonlocal status, answer
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            answer += message.get("body", b"")

    await application(dict(scope), receive, send)
    if status == 200 and b'"result"' not in answer:  # a JSON-RPC error is HTTP 200 too
        raise RuntimeError(f"GetTask answered {answer[:200]!r}")
    return status


async def measure(application, scope: dict, bodies: list[bytes], calls: int, lanes: int):
    async def lane(n: int, offset: int) -> None:
        for i in range(n):
            status = await call(application, scope, bodies[(offset + i) % len(bodies)])
            if status != 200:
                raise RuntimeError(f"GetTask answered HTTP {status}")

    await lane(50, 0)  # warm-up: connections, imports, caches
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(lane(calls // lanes, k) for k in range(lanes)))
    done = (calls // lanes) * lanes
    return (time.perf_counter() - wall) / done, (time.process_time() - cpu) / done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrent", type=int, default=16)
    args = parser.parse_args()
    configure(args.scale_out)
    os.environ["TASKDECK_DEBUG"] = "0"
    os.environ["TASKDECK_RATE_CREATE"] = "0"  # its 100 tasks are made by the key's tenant

    import django

    django.setup()
    from django.core.management import call_command

    from a2a import api_keys, services
    from a2a.auth import authenticate

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write"])
    # the key's own tenant: a key without the operator scope sees only its tenant's tasks
    # (made by another actor, every GetTask here was answered "task not found", -32001)
    actor = authenticate(f"Bearer {token}").actor
    ids = []
    for i in range(100):
        message = services.IncomingMessage(
            message_id=f"b{i}", parts=[{"kind": "text", "text": f"task {i}"}]
        )
        ids.append(services.create_task(message, actor=actor, skill="batch").id)
    bodies = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": i}}).encode()
        for i in ids
    ]
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"a2a-version", b"1.0"),
        (b"content-length", str(len(bodies[0])).encode()),
    ]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/a2a/", "raw_path": b"/a2a/", "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }  # fmt: skip
    from dashboard.asgi import application

    wall, cpu = asyncio.run(measure(application, scope, bodies, args.calls, args.concurrent))
    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"GetTask through the ASGI app, no server ({mode}; {args.concurrent} at a time)")
    print(f"  {wall * 1000:.2f} ms wall per call ({1 / wall:.0f} calls/s), {cpu * 1000:.2f} ms CPU")


if __name__ == "__main__":
    main()
