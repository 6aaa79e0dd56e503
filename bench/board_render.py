"""How the task board copes with 1,000 tasks changing 20 times a second. Prints figures;
asserts nothing.

    .venv/bin/python bench/board_render.py [--tasks 1000] [--rate 20] [--seconds 15]
        [--finished 0]

--finished N first makes N tasks that end (created, then canceled, through the services,
500 to a transaction): the database then holds N + --tasks tasks, of which the live view
keeps the open ones and the newest finished (TASKDECK_VIEW_FINISHED_MAX). Issue 15's
scale figure is `--finished 90000 --tasks 10000`: 100,000 tasks, 10,000 open — more than
one STATE_SNAPSHOT holds, so the board gets the cut (agui.selectors.window) and says so.

A throwaway SQLite database (or DATABASE_URL) gets --tasks tasks through `a2a.services`;
Daphne serves the dashboard; headless Chromium (Debian's, via Playwright) opens the board
signed in as an operator. Then this process makes --rate changes a second through the
services (start, progress, agent text, pause, resume) for --seconds, while the page
records, for each AG-UI event it applies (static/js/board.js, window.__boardMetrics):
- time to first render: navigation start -> every row of the snapshot in the DOM;
- snapshot render: the STATE_SNAPSHOT message -> its rows in the DOM (JS time);
- per-delta render: one STATE_DELTA message -> patched state, rows and counts (JS time);
- per-delta to next frame: the same message -> the next animation frame has run
  (compare with the idle page's own time to next frame, printed as a baseline).
At the end the page's view must equal a fresh snapshot (it reports the mismatches).
Without REDIS_URL the server hears of changes made in this process by polling the event
log (every 0.5 s), so deltas arrive in bursts; with REDIS_URL they arrive one by one.
This process projects its changes into the live view on the committing thread
(TASKDECK_PROJECTION=sync, docs/design/projection-after-commit.md, D8): it reads the view
right after making them; the served Daphne keeps the default (a projector thread).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VAR = tempfile.mkdtemp(prefix="taskdeck-board-bench-")
os.environ.update(
    DJANGO_SETTINGS_MODULE="dashboard.settings",
    DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "bench-only"),
    TASKDECK_VAR_DIR=VAR,
    # sync Playwright keeps an event loop in this thread while we call the ORM
    DJANGO_ALLOW_ASYNC_UNSAFE="true",
)
os.environ.setdefault("TASKDECK_PROJECTION", "sync")  # see the module's docstring

import django  # noqa: E402

django.setup()

import logging  # noqa: E402

# This process has no channel layer worth poking (the in-memory one is its own); the
# server polls the log instead. Keep the warnings about it out of the figures.
logging.getLogger("agui").setLevel(logging.ERROR)
logging.getLogger("a2a").setLevel(logging.ERROR)

from _harness import free_port, start_server  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from a2a import services  # noqa: E402
from a2a.errors import TaskError, TransitionRefused  # noqa: E402
from a2a.models import Task  # noqa: E402
from agui import selectors  # noqa: E402

ACTOR = services.Actor("operator", "bench")
AGENT = services.Actor("agent", "bench")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WORDS = ["render", "export", "index", "backup", "rotate", "deploy", "migrate", "scan", "audit"]


def make_finished(n: int) -> None:
    for start in range(0, n, 500):
        with django.db.transaction.atomic():
            for i in range(start, min(n, start + 500)):
                msg = services.IncomingMessage(
                    message_id=f"done-{i}", parts=[{"kind": "text", "text": f"old job {i}"}]
                )
                task = services.create_task(msg, actor=ACTOR, skill="batch")
                services.cancel_task(task.id, actor=ACTOR, reason="bench: finished long ago")


def make_tasks(n: int) -> list[str]:
    ids = []
    for i in range(n):
        text = f"{random.choice(WORDS)} batch {i} for customer {random.randint(1, 400)}"
        msg = services.IncomingMessage(
            message_id=f"bench-{i}", parts=[{"kind": "text", "text": text}]
        )
        skill = random.choice(["batch", "approval", "ci-wait"])
        task = services.create_task(msg, actor=ACTOR, skill=skill, metadata={"skill": skill})
        if i % 3:
            services.start_task(task.id, actor=AGENT)
            services.report_progress(task.id, random.randint(0, 9), 10, actor=AGENT)
        if i % 7 == 0:
            services.pause_task(task.id, actor=ACTOR, reason="bench hold")
        ids.append(task.id)
    return ids


def change(task_id: str) -> None:
    """One change through the services, whatever the task's state."""
    state = Task.objects.values_list("state", flat=True).get(pk=task_id)
    if state == "submitted":
        services.start_task(task_id, actor=AGENT)
    elif state == "working":
        roll = random.random()
        if roll < 0.6:
            services.report_progress(task_id, random.randint(0, 10), 10, actor=AGENT)
        elif roll < 0.85:
            services.emit_text(task_id, f"step {random.randint(1, 99)} done", actor=AGENT)
        else:
            services.pause_task(task_id, actor=ACTOR, reason="bench pause")
    elif state == "paused-by-client":
        services.resume_task(task_id, actor=ACTOR)


def summary(values: list[float]) -> str:
    if not values:
        return "n=0"
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    median = statistics.median(values)
    return f"n={len(values)} median={median:.2f} ms  p95={p95:.2f} ms  max={ordered[-1]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20.0, help="changes per second")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--finished", type=int, default=0, help="ended tasks made first")
    args = parser.parse_args()
    random.seed(7)
    call_command("migrate", verbosity=0)
    t0 = time.monotonic()
    make_finished(args.finished)
    ids = make_tasks(args.tasks)
    print(f"made {args.finished} ended and {len(ids)} open tasks in {time.monotonic() - t0:.1f} s")
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
            context = browser.new_context(base_url=base, viewport={"width": 1400, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            page = context.new_page()
            page.goto("/")
            page.wait_for_selector("body[data-board-ready]", timeout=60_000)
            first = page.evaluate("window.__boardMetrics.firstRender")
            snap = page.evaluate("window.__boardMetrics.snapshotRender[0]")
            rows = page.locator("#board-rows .row").count()
            held = page.evaluate("Object.keys(window.taskdeck.live.tasks).length")
            cut = page.evaluate("window.taskdeck.live.state.truncated || null")
            layer = "redis" if os.environ.get("REDIS_URL") else "in-memory (polling)"
            db = django.db.connection.vendor
            print(f"Taskdeck board benchmark ({db}, channel layer {layer}, Chromium headless)")
            print(f"time to first render (navigation -> {rows} rows)     {first:.0f} ms")
            print(f"tasks held by the page: {held}" + (f" (snapshot cut: {cut})" if cut else ""))
            print(f"snapshot render (STATE_SNAPSHOT -> rows in the DOM) {snap:.0f} ms")

            idle = page.evaluate(
                """async () => {
                    const out = [];
                    for (let i = 0; i < 30; i++) {
                        const t0 = performance.now();
                        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
                        out.push(performance.now() - t0);
                        await new Promise((r) => setTimeout(r, 30));
                    }
                    return out;
                }"""
            )
            print(f"idle page to next frame (baseline, nothing changed) {summary(idle)}")

            interval = 1.0 / args.rate
            made = 0
            start = time.monotonic()
            while time.monotonic() - start < args.seconds:
                due = start + made * interval
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
                with contextlib.suppress(TaskError, TransitionRefused):
                    change(random.choice(ids))
                made += 1
            elapsed = time.monotonic() - start
            print(f"changes made: {made} in {elapsed:.1f} s ({made / elapsed:.1f}/s)")

            expected = selectors.snapshot()
            # the page follows what it holds (all of the view, or the cut it was sent)
            holds = set(page.evaluate("Object.keys(window.taskdeck.live.tasks)"))
            expected["view"]["tasks"] = {
                k: v for k, v in expected["view"]["tasks"].items() if k in holds
            }
            versions = {k: v["version"] for k, v in expected["view"]["tasks"].items()}
            page.wait_for_function(
                """(versions) => Object.entries(versions).every(
                    ([id, v]) => window.taskdeck.live.tasks[id]?.version === v)""",
                arg=versions,
                timeout=60_000,
            )
            state = page.evaluate("window.taskdeck.live.state")
            shown = state["view"]["tasks"]
            mismatched = sum(1 for k, v in expected["view"]["tasks"].items() if shown.get(k) != v)
            m = page.evaluate("window.__boardMetrics")
            stats = page.evaluate("window.taskdeck.live.stats")
            print(f"per-delta render (JS: patch + rows + counts)       {summary(m['deltas'])}")
            print(f"per-delta to next frame                            {summary(m['paints'])}")
            print(
                f"deltas applied {stats['deltas']}, resyncs {stats['resyncs']}, "
                f"entries differing from a fresh snapshot: {mismatched}"
            )
            browser.close()
    finally:
        daphne.terminate()
        daphne.wait(timeout=10)


if __name__ == "__main__":
    main()
