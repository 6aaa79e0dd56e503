"""The live board under a burst of new tasks (issue 29, item 4): with 1,535 tasks created
in 80 s the page's update -> frame delay had reached a median of 17.5 s. Prints figures;
asserts nothing.

    .venv/bin/python bench/live_burst.py [--tasks 1500] [--seconds 80] [--before 500]

A throwaway SQLite database (or DATABASE_URL) gets --before tasks first (a third of them
parked by their agent, as in the issue's fleet), Daphne serves the dashboard, headless
Chromium opens the board signed in as an operator; then this process creates --tasks
tasks through `a2a.services` evenly over --seconds (about 19 a second by default), a
quarter of them started and given progress, so the page hears creations and changes.

The page measures itself (static/js/live.js, `live.frameDelays`), per STATE_DELTA:
- arrival -> frame: the WebSocket message arrived -> the frame that shows it has been
  painted (deltas are applied at once and drawn once per animation frame);
- commit -> frame: the change's `updatedAt` (the server's clock; same machine) -> that
  frame: what an operator waits, the server's projection and fan-out included.
With REDIS_URL set the server hears of each change at once; without it, it polls the
event log every 0.5 s and deltas arrive in bursts (so commit -> frame is at least that).
At the end the page's view must equal a fresh snapshot (it reports the mismatches), and
the board must hold every task.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.update(
    DJANGO_SETTINGS_MODULE="dashboard.settings",
    DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "bench-only"),
    TASKDECK_VAR_DIR=tempfile.mkdtemp(prefix="taskdeck-live-bench-"),
    TASKDECK_RATE_SOCKET="0",
    DJANGO_ALLOW_ASYNC_UNSAFE="true",  # sync Playwright keeps a loop in this thread
)
os.environ.setdefault("TASKDECK_PROJECTION", "sync")  # this process projects as it commits

import django  # noqa: E402

django.setup()

import logging  # noqa: E402

logging.getLogger("agui").setLevel(logging.ERROR)
logging.getLogger("a2a").setLevel(logging.ERROR)

from _harness import free_port, start_server  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from a2a import services  # noqa: E402
from agui import selectors  # noqa: E402

ACTOR = services.Actor("operator", "bench")
AGENT = services.Actor("agent", "bench")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def create(i: int, *, park: bool = False) -> None:
    msg = services.IncomingMessage(
        message_id=f"burst-{i}", parts=[{"kind": "text", "text": f"burst job {i}"}]
    )
    task = services.create_task(msg, actor=ACTOR, skill="batch", metadata={"skill": "batch"})
    if park:
        services.start_task(task.id, actor=AGENT)
        services.park_task(task.id, actor=AGENT, reason="waiting for CI")
    elif i % 4 == 0:
        services.start_task(task.id, actor=AGENT)
        services.report_progress(task.id, 1, 10, actor=AGENT)


def summary(values: list[float]) -> str:
    if not values:
        return "n=0"
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return (
        f"n={len(values)} median={statistics.median(values):.1f} ms  p95={p95:.1f} ms  "
        f"max={ordered[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1500)
    parser.add_argument("--seconds", type=float, default=80.0)
    parser.add_argument("--before", type=int, default=500, help="tasks made before the page")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    for i in range(args.before):
        create(-1 - i, park=i % 3 == 0)
    user = get_user_model().objects.create_superuser("bench", password="bench-only")
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    port = free_port()
    daphne = start_server(dict(os.environ), port)  # bench/_harness.py: served as production
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            # BENCH_MOTION=reduce: the board without its change flash
            motion = os.environ.get("BENCH_MOTION", "no-preference")
            context = browser.new_context(
                base_url=base, viewport={"width": 1440, "height": 900}, reduced_motion=motion
            )
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            page = context.new_page()
            page.goto("/")
            page.wait_for_selector("body[data-board-ready]", timeout=60_000)
            # main-thread long tasks (> 50 ms) while the burst runs
            page.evaluate(
                """() => { window.__long = 0; new PerformanceObserver((l) => {
                    for (const e of l.getEntries()) window.__long += e.duration;
                }).observe({ type: "longtask" }); }"""
            )
            interval = args.seconds / args.tasks
            start = time.monotonic()
            for i in range(args.tasks):
                due = start + i * interval
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
                create(i)
            elapsed = time.monotonic() - start
            expected = selectors.snapshot()
            versions = {k: v["version"] for k, v in expected["view"]["tasks"].items()}
            page.wait_for_function(
                """(versions) => Object.entries(versions).every(
                    ([id, v]) => window.taskdeck.live.tasks[id]?.version === v)""",
                arg=versions,
                timeout=120_000,
            )
            waited = time.monotonic() - start - elapsed
            shown = page.evaluate("window.taskdeck.live.state.view.tasks")
            mismatched = sum(1 for k, v in expected["view"]["tasks"].items() if shown.get(k) != v)
            delays = page.evaluate("window.taskdeck.live.frameDelays")
            stats = page.evaluate("window.taskdeck.live.stats")
            long_ms = page.evaluate("window.__long")
            redraw = page.evaluate("window.__boardMetrics.deltas")
            layer = "redis" if os.environ.get("REDIS_URL") else "in-memory (polling)"
            print(
                f"Taskdeck live burst ({django.db.connection.vendor}, channel layer {layer}, "
                "Chromium headless, 1440x900 board)"
            )
            print(
                f"{args.tasks} tasks created in {elapsed:.1f} s "
                f"({args.tasks / elapsed:.1f}/s) over {args.before} made before; "
                f"page caught up {waited:.1f} s after the last"
            )
            print(f"arrival -> frame  {summary(delays['arrival'])}")
            print(f"commit  -> frame  {summary(delays['commit'])}")
            print(f"board redraw per frame (JS: rows, layout, counts) {summary(redraw)}")
            print(f"main-thread long tasks during the burst: {long_ms / 1000:.1f} s")
            print(
                f"deltas {stats['deltas']}, resyncs {stats['resyncs']}, entries differing "
                f"from a fresh snapshot: {mismatched} of {len(versions)}"
            )
            browser.close()
    finally:
        daphne.terminate()
        daphne.wait(timeout=10)


if __name__ == "__main__":
    main()
