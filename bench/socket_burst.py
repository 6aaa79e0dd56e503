"""A burst of AG-UI sockets (issue 31, item 2): 200 sockets opened at once with one read
key, then dropped (aborted, open or not); printed: how many opened / were refused, the web
process's CPU % over the second 10 s after the drop, its resident memory, the agent card's
latency meanwhile, and what /healthz says of the process's sockets and log readers. Then
30 sockets that never read while 300 changes are committed: the process's memory before,
during and after. One Daphne process, SQLite by default. Prints figures; asserts nothing.

    .venv/bin/python bench/socket_burst.py [--scale-out] [--sockets 200] [--rate 0]

`--rate N` runs the server with TASKDECK_RATE_SOCKET=N (0: socket opens unlimited, to see
the reader alone). The machine is shared: the load average is printed with the figures.

Measured (SQLite, 2 shared cores). Before issue 31 (load 15-18): 4 of 200 opened within
2 s, the rest aborted; the card p50 3,143 ms in the 10 s after; then CPU 40 %, RSS 106 ->
273 MB; the 30 silent sockets took it to 608 MB, 660 MB after they went (the readers of
the aborted burst kept queueing every change for sockets that no longer existed). After
(load 12): 60 opened, 140 refused with 4429 in 1.0 s; card p50 7.2 ms, p99 51 ms; CPU 0 %
10 s after, RSS 116 MB, 0 sockets and 0 readers; the 30 silent sockets 116 -> 121 MB.
With `--rate 0` (load 8): 183 opened, 17 aborted; card p50 6.0 ms, p99 21 ms; CPU 0 %;
RSS 116 MB; the silent sockets 116 -> 121 MB, one closed with 4008.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import httpx
from _harness import configure, free_port, percentiles, start_server

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_percent(pid: int, seconds: float) -> float:
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.monotonic() - started)


async def burst(url: str, token: str, n: int) -> tuple[int, int, int]:
    """Open n sockets at once, drop them all after at most 2 s; (opened, refused, other)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    headers = {"Authorization": f"Bearer {token}", "Origin": "http://127.0.0.1"}
    outcome = {"opened": 0, "refused": 0, "other": 0}

    async def one():
        try:
            async with connect(url, additional_headers=headers, open_timeout=2) as ws:
                try:
                    await asyncio.wait_for(ws.recv(), 2)
                    outcome["opened"] += 1
                except ConnectionClosed as exc:
                    outcome["refused" if exc.rcvd and exc.rcvd.code == 4429 else "other"] += 1
                ws.transport.abort()  # dropped, not closed politely
        except Exception:
            outcome["other"] += 1

    await asyncio.gather(*(one() for _ in range(n)))
    return outcome["opened"], outcome["refused"], outcome["other"]


def card_latencies(base: str, seconds: float) -> list[float]:
    out = []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=base, timeout=30) as http:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            http.get("/.well-known/agent-card.json").raise_for_status()
            out.append(time.perf_counter() - started)
            time.sleep(0.2)
    return out


def sockets_health(base: str) -> dict:
    return httpx.get(base + "/healthz", timeout=30).json().get("sockets", {})


async def silent(url: str, token: str, n: int):
    """n sockets that read their snapshot, then never read again (a client whose reads
    stopped: its TCP window closes once its kernel buffer is full)."""
    import socket

    from websockets.asyncio.client import connect

    headers = {"Authorization": f"Bearer {token}", "Origin": "http://127.0.0.1"}
    out = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        ws = await connect(url, sock=sock, additional_headers=headers, max_queue=1)
        await ws.recv()
        ws.transport.pause_reading()
        out.append(ws)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--rate", type=int, default=None)
    args = parser.parse_args()
    env = configure(args.scale_out)
    os.environ.setdefault("TASKDECK_PROJECTION", "sync")
    if args.rate is not None:
        env["TASKDECK_RATE_SOCKET"] = str(args.rate)
    import django

    django.setup()
    from agui_fanout import make_tasks
    from django.core.management import call_command

    from a2a import api_keys, services

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read"])
    _, quiet_token = api_keys.create_key("quiet", ["read", "operator"])  # a tenant of its own
    make_tasks(200, "burst")
    port = free_port()
    server = start_server(env, port)
    base, url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws/agui/"
    print(f"socket burst ({'PostgreSQL + Redis' if args.scale_out else 'SQLite'}; one Daphne)")
    print(f"load average before: {os.getloadavg()}")
    try:
        card_latencies(base, 1)  # warm
        print(f"idle: CPU {cpu_percent(server.pid, 3):.0f} %, RSS {rss_mb(server.pid):.0f} MB, "
              f"card {percentiles(card_latencies(base, 2))}")  # fmt: skip
        started = time.monotonic()
        opened, refused, other = asyncio.run(burst(url, token, args.sockets))
        print(
            f"{args.sockets} sockets at once: {opened} opened, {refused} refused (4429), "
            f"{other} otherwise; all dropped after {time.monotonic() - started:.1f} s"
        )
        card = card_latencies(base, 10)  # the 10 s after the drop
        print(f"card during the 10 s after the drop: {percentiles(card)}")
        print(
            f"10 s after: CPU {cpu_percent(server.pid, 3):.0f} % (over 3 s), "
            f"RSS {rss_mb(server.pid):.0f} MB, sockets {sockets_health(base)}"
        )

        actor = services.Actor("operator", "bench")
        from a2a.models import Task

        ids = list(Task.objects.values_list("id", flat=True)[:100])
        before = rss_mb(server.pid)
        loop = asyncio.new_event_loop()
        quiet = loop.run_until_complete(silent(url, quiet_token, 30))
        for i in range(300):
            task_id = ids[i % len(ids)]
            if i // len(ids) % 2 == 0:
                services.pause_task(task_id, actor=actor, reason="x" * 1500)
            else:
                services.resume_task(task_id, actor=actor)
        time.sleep(3)  # let the server send what it will
        during = rss_mb(server.pid)
        closed = sum(1 for ws in quiet if ws.close_code is not None or ws.transport.is_closing())
        for ws in quiet:
            ws.transport.abort()
        loop.run_until_complete(asyncio.sleep(1))
        loop.close()
        time.sleep(2)
        print(
            f"30 sockets that stopped reading, 300 changes: RSS {before:.0f} -> {during:.0f} MB, "
            f"{rss_mb(server.pid):.0f} MB after they went; sockets {sockets_health(base)}; "
            f"closed by the server meanwhile (as the client saw it): {closed}"
        )
        print(f"load average after: {os.getloadavg()}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
