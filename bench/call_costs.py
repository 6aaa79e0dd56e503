"""What one call costs inside Taskdeck, without a server: queries and CPU per phase of a
blocking SendMessage to an agent that answers at once (create, the inline run, the answer's
read) and of PauseTask / ResumeTask / GetTask, each through `a2a.protocol.calls.decide` as a
binding calls it. Prints figures (and with --sql the statements of each phase); asserts
nothing.

    .venv/bin/python bench/call_costs.py [--scale-out] [--calls 50] [--sql send,run,resume]
        [--profile pause,resume]   (SORT=tottime: by own time; CALLEES=<regex>: what the
                                    matching functions call, e.g. CALLEES='on_task_event')

cProfile sees only this thread: a run's database calls on pooled threads are not in it.
Its times are wall-clock, so they include waiting for the database.

Queries are counted on every thread's connections (the run's database calls go to pooled
threads) by wrapping Django's cursor; savepoints and their releases count as queries (each
is a round trip). CPU is this process's (all threads), so on PostgreSQL the server's own
CPU is not in it. Compare with bench/load.py's "CPU ms/call", which adds the HTTP server,
the thread hops under load and PostgreSQL's backends.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import logging
import os
import pstats
import re
import time

from _harness import configure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true", help="PostgreSQL + Redis")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--sql", default="", help="phases whose statements to print")
    parser.add_argument(
        "--profile", default="", help="phases to profile (cProfile; the top functions printed)"
    )
    args = parser.parse_args()
    configure(args.scale_out)
    os.environ["TASKDECK_DEBUG"] = "0"

    import django

    django.setup()
    from django.core.management import call_command
    from django.db.backends import utils

    from a2a import api_keys
    from a2a.auth import authenticate
    from a2a.protocol import calls
    from a2a.runtime import inline

    call_command("migrate", verbosity=0)
    # each run here is "taken outside a served event loop" (it is run below): not news
    logging.getLogger("a2a.runtime.inline").setLevel(logging.ERROR)
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    statements: collections.Counter = collections.Counter()
    shown = set(filter(None, args.sql.split(",")))
    current: list[str | None] = [None]
    profiled = set(filter(None, args.profile.split(",")))
    profiler = cProfile.Profile()
    execute = utils.CursorWrapper._execute_with_wrappers

    def counted(self, sql, params, many, executor):
        if current[0]:
            totals[current[0]][0] += 1
            if current[0] in shown:
                shape = re.sub(r'"s\d+_x\d+"', "<sp>", re.sub(r"'[^']*'", "?", sql))
                statements[(current[0], shape[:140])] += 1
        return execute(self, sql, params, many, executor)

    utils.CursorWrapper._execute_with_wrappers = counted

    def phase(name: str, fn):
        current[0] = name
        cpu = time.process_time()
        try:
            if name in profiled:
                return profiler.runcall(fn)
            return fn()
        finally:
            totals[name][1] += time.process_time() - cpu
            current[0] = None

    _, token = api_keys.create_key("bench", ["read", "write"])
    principal = authenticate(f"Bearer {token}")
    headers = {"A2A-Version": "1.0"}

    def send(message_id: str) -> calls.Pending:
        message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "go"}]}
        params = {"message": message, "metadata": {"skill": "tck"}}
        pending = calls.decide("SendMessage", params, principal, headers)
        assert isinstance(pending, calls.Pending), pending
        return pending

    warmup = 5
    for i in range(warmup + args.calls):
        if i == warmup:
            totals.clear()
            statements.clear()
            profiler = cProfile.Profile()
        # a blocking send whose agent completes at once, run as the web process runs it
        # (outside a served loop the run is not scheduled on commit: it is run here)
        pending = phase("send", lambda i=i: send(f"tck-complete-task-bench-{i}"))
        phase("run", lambda p=pending: asyncio.run(inline._run(p.task_id)))
        answer = phase("answer", lambda p=pending: calls.settled(p))
        assert answer.value["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        # a task that stays working, paused and resumed (its next slice is a worker's)
        working = send(f"bench-idle-{i}")
        asyncio.run(inline._run(working.task_id))
        for name, params in (
            ("pause", {"taskId": working.task_id, "reason": "bench"}),
            ("resume", {"taskId": working.task_id}),
            ("get", {"id": working.task_id}),
        ):
            method = {"pause": "PauseTask", "resume": "ResumeTask", "get": "GetTask"}[name]
            out = phase(name, lambda m=method, p=params: calls.decide(m, p, principal, headers))
            assert isinstance(out, calls.Answer), out

    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"Cost per call in one process ({mode}; {args.calls} calls each)")
    for name, (queries, cpu) in totals.items():
        per_call = cpu / args.calls * 1000
        print(f"  {name:8s} {queries / args.calls:5.1f} queries  {per_call:6.2f} ms CPU")
    for (name, sql), n in sorted(statements.items()):
        print(f"  {n / args.calls:4.1f} x {name:7s} {sql}")
    if profiled:
        print(f"Profile of {', '.join(sorted(profiled))} (cumulative time, {args.calls} calls)")
        stats = pstats.Stats(profiler).sort_stats(os.environ.get("SORT", "cumulative"))
        if os.environ.get("CALLEES"):  # e.g. CALLEES=on_task_event: what that calls
            stats.print_callees(os.environ["CALLEES"])
        else:
            stats.print_stats(45)


if __name__ == "__main__":
    main()
