"""What one call costs inside Taskdeck, without a server: queries and CPU per phase of a
blocking SendMessage to an agent that answers at once (create, the inline run, the answer's
read) and of PauseTask / ResumeTask / GetTask, each through `a2a.protocol.calls.decide` as a
binding calls it. Prints figures (and with --sql the statements of each phase); asserts
nothing.

    .venv/bin/python bench/call_costs.py [--scale-out] [--calls 50] [--sql send,run,resume]
        [--profile pause,resume]   (SORT=tottime: by own time; CALLEES=<regex>: what the
                                    matching functions call, e.g. CALLEES='project_task')
    (--sql and --profile take phases, `send.project` for the projection after a phase, or
    `project` for the projection after every phase)

The AG-UI projection runs after the writer's commit (docs/design/projection-after-commit.md,
D8): in production a thread of the process projects what each commit left due. Here the
projection's on-commit subscriber (agui.projection.wake) is replaced by one that only
notes the task, as the thread's hand-over does, so each phase measures what the writer
pays (its due rows included); then the bench projects what that phase committed in one
`project()` call, on this thread, measured as the phase's "projection" (`<phase>.project`):
what moved to the projector. One pass per phase: the run's two transactions are projected
together, as a projector thread one pass behind does; an idle thread may take two passes.
The process itself is configured with TASKDECK_PROJECTION=sync (nothing here starts a
projector thread; the phases' projection is this bench's own).

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
import threading
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
    os.environ.setdefault("TASKDECK_PROJECTION", "sync")  # see the module's docstring

    import django

    django.setup()
    from django.core.management import call_command
    from django.db.backends import utils

    from a2a import api_keys, events
    from a2a.auth import authenticate
    from a2a.protocol import calls
    from a2a.runtime import inline
    from agui import projection

    call_command("migrate", verbosity=0)
    # each run here is "taken outside a served event loop" (it is run below): not news
    logging.getLogger("a2a.runtime.inline").setLevel(logging.ERROR)
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    statements: collections.Counter = collections.Counter()

    def chosen(names: str) -> set[str]:
        picked = set(filter(None, names.split(",")))
        if "project" in picked:
            picked |= {f"{p}.project" for p in ("send", "run", "answer", "pause", "resume")}
        return picked

    shown = chosen(args.sql)
    current: list[str | None] = [None]
    profiled = chosen(args.profile)
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

    # the projection's hand-over, as a projector thread gets it (see the module's docstring)
    due: set[str] = set()
    handed = threading.Lock()

    def hand_over(event) -> None:
        with handed:
            due.add(event.task_id)

    def take() -> list[str]:
        with handed:
            ids = sorted(due)
            due.clear()
        return ids

    events.unsubscribe(projection.wake)
    events.subscribe(hand_over, on_commit=True)

    def project(name: str) -> None:
        """Project what phase `name` committed, measured as `<name>.project`."""
        ids = take()
        if ids:
            phase(f"{name}.project", lambda: projection.project(ids))

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
        project("send")
        phase("run", lambda p=pending: asyncio.run(inline._run(p.task_id)))
        project("run")
        answer = phase("answer", lambda p=pending: calls.settled(p))
        project("answer")
        assert answer.value["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        # a task that stays working, paused and resumed (its next slice is a worker's)
        working = send(f"bench-idle-{i}")
        asyncio.run(inline._run(working.task_id))
        projection.project(take())  # set-up, not measured
        for name, params in (
            ("pause", {"taskId": working.task_id, "reason": "bench"}),
            ("resume", {"taskId": working.task_id}),
            ("get", {"id": working.task_id}),
        ):
            method = {"pause": "PauseTask", "resume": "ResumeTask", "get": "GetTask"}[name]
            out = phase(name, lambda m=method, p=params: calls.decide(m, p, principal, headers))
            assert isinstance(out, calls.Answer), out
            project(name)

    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"Cost per call in one process ({mode}; {args.calls} calls each)")
    print(
        f"  {'phase':8s} {'writer':>21s}   {'projection after it':>21s}   {'both':>21s}\n"
        f"  {'':8s}" + "   ".join([f"{'queries':>9s} {'ms CPU':>11s}"] * 3)
    )

    def cells(key: str) -> tuple[float, float]:
        queries, cpu = totals.get(key, (0, 0.0))
        return queries / args.calls, cpu / args.calls * 1000

    for name in [n for n in totals if not n.endswith(".project")]:
        wq, wc = cells(name)
        pq, pc = cells(f"{name}.project")
        print(
            f"  {name:8s} {wq:9.1f} {wc:11.2f}   {pq:9.1f} {pc:11.2f}   "
            f"{wq + pq:9.1f} {wc + pc:11.2f}"
        )
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
