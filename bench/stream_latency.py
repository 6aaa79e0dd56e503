"""A2A stream delivery latency: a state change committed -> the status-update received by
subscribers of tasks/resubscribe (SSE), with 1 and 100 concurrent subscribers.
Prints figures; asserts nothing.

    .venv/bin/python bench/stream_latency.py [--scale-out] [--subscribers 1,100] [--changes 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from _harness import configure, free_port, percentiles, start_server


async def measure(base: str, token: str, task_id: str, subscribers: int, changes: int):
    import httpx
    from asgiref.sync import sync_to_async

    from a2a import services
    from a2a.models import TaskEvent

    actor = services.Actor("operator", "bench")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": task_id}}
    headers = {"Authorization": f"Bearer {token}"}
    received: list[dict[int, float]] = []
    ready = asyncio.Event()
    connected = 0
    limits = httpx.Limits(max_connections=subscribers + 5)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def subscriber() -> None:
            nonlocal connected
            got: dict[int, float] = {}
            received.append(got)
            async with client.stream("POST", "/a2a/", json=body, headers=headers) as response:
                lines = response.aiter_lines()
                event_id = None
                async for line in lines:
                    if line.startswith("id: "):
                        event_id = int(line[4:])
                    elif line.startswith("data: "):
                        result = json.loads(line[6:])["result"]
                        if result.get("kind") == "task":
                            connected += 1
                            if connected == subscribers:
                                ready.set()
                        elif event_id is not None:
                            got.setdefault(event_id, time.time())
                            if len(got) >= changes:
                                return

        tasks = [asyncio.ensure_future(subscriber()) for _ in range(subscribers)]
        await asyncio.wait_for(ready.wait(), 60)
        committed: dict[int, float] = {}
        last_event = sync_to_async(
            lambda: TaskEvent.objects.filter(task_id=task_id).order_by("-id").first().id
        )
        for i in range(changes):
            change = services.pause_task if i % 2 == 0 else services.resume_task
            await sync_to_async(change)(task_id, actor=actor)
            committed[await last_event()] = time.time()
            await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
    return [got[e] - committed[e] for got in received for e in got if e in committed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--subscribers", default="1,100")
    parser.add_argument("--changes", type=int, default=20)
    args = parser.parse_args()
    env = configure(args.scale_out)

    import django

    django.setup()
    from django.core.management import call_command

    from a2a import api_keys, services

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write", "operator"])
    actor = services.Actor("operator", "bench")
    msg = services.IncomingMessage(message_id="b", parts=[{"kind": "text", "text": "bench"}])
    task_id = services.create_task(msg, actor=actor, skill="batch").id
    services.start_task(task_id, actor=actor)
    port = free_port()
    server = start_server(env, port)
    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"A2A stream latency ({mode}; one Daphne process; changes made in another process)")
    try:
        for n in [int(s) for s in args.subscribers.split(",")]:
            lat = asyncio.run(measure(f"http://127.0.0.1:{port}", token, task_id, n, args.changes))
            print(f"tasks/resubscribe, {n:>3} subscribers: commit -> event  {percentiles(lat)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
