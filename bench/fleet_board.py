"""Issue 29's fleet, as operators met it: does the board show what needs a person when
it is a few among thousands? Prints what it finds and where it saved screenshots; exits
1 if the board hides a task that needs a person or its counts disagree with the inbox.

    .venv/bin/python bench/fleet_board.py [--parked 1900] [--approvals 4] [--paused 5]
        [--working 100] [--finished 41] [--shots DIR]

A throwaway SQLite database (or DATABASE_URL) gets the issue's mix through `a2a.services`,
as clients and agents make it: --parked tasks parked by their agent (each until its own
event), --approvals waiting for an approval (made FIRST, so 1,900 fresher parks would have
pushed them out of a newest-first cut), --paused paused by an operator, --working working,
--finished rejected ~30 minutes before the run (moved back in time). Daphne serves the
dashboard; headless Chromium (Debian's, via Playwright) opens it signed in as an operator
at 1440x900 and 390x844, light and dark, and reads:
- the board: which tasks waiting for input and paused by an operator it holds (every one
  must be there), its "Needs input" and "Paused by client" counts, the tab title's number
  and the Inbox badge — all against the inbox page's count of pending requests;
- history search: an old rejected task found by its id and by a word, timed (the page's
  server time, navigation start -> response end).
Screenshots of the board and the inbox at each size and scheme go to --shots.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VAR = tempfile.mkdtemp(prefix="taskdeck-fleet-board-")
os.environ.update(
    DJANGO_SETTINGS_MODULE="dashboard.settings",
    DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "bench-only"),
    TASKDECK_VAR_DIR=VAR,
    TASKDECK_RATE_CREATE="0",
    DJANGO_ALLOW_ASYNC_UNSAFE="true",  # sync Playwright keeps an event loop in this thread
)
os.environ.setdefault("TASKDECK_PROJECTION", "sync")  # this process reads what it made

import django  # noqa: E402

django.setup()

from _harness import free_port, start_server  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from a2a import services  # noqa: E402
from a2a.models import Task  # noqa: E402

CLIENT = services.Actor("client", "fleet-client")
OPERATOR = services.Actor("operator", "fleet-operator")
AGENT = services.Actor("agent", "fleet-agent")
APPROVAL = {
    "title": "Approve the rollout",
    "fields": [{"name": "decision", "type": "approval", "required": True}],
}
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def made(skill: str, text: str) -> str:
    msg = services.IncomingMessage(
        message_id=f"fleet-{time.monotonic_ns()}", parts=[{"kind": "text", "text": text}]
    )
    return services.create_task(msg, actor=CLIENT, skill=skill).id


def fleet(args) -> dict[str, list[str]]:
    """The mix, in the order that hurt: the tasks needing a person first, then the crowd."""
    out: dict[str, list[str]] = {"approvals": [], "paused": [], "rejected": []}
    for i in range(args.approvals):
        tid = made("approval", f"rollout plan {i} for region {i + 1}")
        services.start_task(tid, actor=AGENT)
        services.request_input(tid, actor=AGENT, explanation="Approve?", request=APPROVAL)
        out["approvals"].append(tid)
    for i in range(args.finished):
        tid = made("approval", f"quarterly migration {i} zebrafish")
        services.reject_task(tid, actor=AGENT, reason="not for me")
        out["rejected"].append(tid)
    half_hour_ago = timezone.now() - timedelta(minutes=30)
    Task.objects.filter(pk__in=out["rejected"]).update(updated_at=half_hour_ago)
    for i in range(args.paused):
        tid = made("batch", f"nightly export {i}")
        services.start_task(tid, actor=AGENT)
        services.pause_task(tid, actor=OPERATOR, reason="hold for the freeze")
        out["paused"].append(tid)
    for start in range(0, args.parked, 200):
        with transaction.atomic():
            for i in range(start, min(args.parked, start + 200)):
                tid = made("ci-wait", f"build {i} waiting for CI")
                services.start_task(tid, actor=AGENT)
                services.park_task(
                    tid, actor=AGENT, reason="waiting on ci", conditions={"onEvent": f"ci.{i}"}
                )
    for i in range(args.working):
        tid = made("batch", f"reindex shard {i}")
        services.start_task(tid, actor=AGENT)
        services.report_progress(tid, i % 10, 10, actor=AGENT)
    return out


def read_board(page) -> dict:
    page.goto("/")
    page.wait_for_selector("body[data-board-ready]", timeout=60_000)
    page.wait_for_function("document.title.startsWith('(')", timeout=30_000)
    live = page.evaluate(
        """() => {
            const tasks = window.taskdeck.live.tasks;
            const by = (s) => Object.keys(tasks).filter((id) => tasks[id].status === s);
            const count = (s) => document.querySelector(`[data-count="${s}"]`)?.textContent;
            const badge = document.getElementById("inbox-count");
            return {
                input: by("input-required"), paused: by("paused-by-client"),
                held: Object.keys(tasks).length, title: document.title,
                countInput: count("input-required"), countPaused: count("paused-by-client"),
                badge: badge && !badge.hidden ? badge.textContent : null,
            };
        }"""
    )
    return live


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parked", type=int, default=1900)
    parser.add_argument("--approvals", type=int, default=4)
    parser.add_argument("--paused", type=int, default=5)
    parser.add_argument("--working", type=int, default=100)
    parser.add_argument("--finished", type=int, default=41)
    parser.add_argument("--shots", default=str(Path(VAR) / "shots"))
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    t0 = time.monotonic()
    made_ids = fleet(args)
    total = Task.objects.count()
    print(f"made {total:,} tasks through the services in {time.monotonic() - t0:.0f} s")
    user = get_user_model().objects.create_superuser("fleet", password="bench-only")
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    daphne = start_server(dict(os.environ), port)
    base = f"http://127.0.0.1:{port}"
    failures = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for name, (w, h) in SIZES.items():
                for scheme in ("light", "dark"):
                    context = browser.new_context(
                        base_url=base, viewport={"width": w, "height": h}, color_scheme=scheme
                    )
                    context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
                    page = context.new_page()
                    board = read_board(page)
                    page.screenshot(path=str(shots / f"board-{name}-{scheme}.png"))
                    page.goto("/inbox")
                    inbox = page.locator("article.inbox-item").count()
                    page.screenshot(path=str(shots / f"inbox-{name}-{scheme}.png"))
                    missing = sorted(set(made_ids["approvals"]) - set(board["input"]))
                    missing += sorted(set(made_ids["paused"]) - set(board["paused"]))
                    title_n = re.match(r"\((\d+)\)", board["title"])
                    line = (
                        f"{name} {w}x{h} {scheme}: board holds {board['held']:,} of {total:,}; "
                        f"waiting for input {len(board['input'])}/{args.approvals}, paused by "
                        f"an operator {len(board['paused'])}/{args.paused}; counts "
                        f"'{board['countInput']}' needs input, '{board['countPaused']}' paused "
                        f"by client; tab title '{board['title']}'; Inbox badge {board['badge']}; "
                        f"inbox lists {inbox}"
                    )
                    print(line)
                    agree = {
                        str(args.approvals),
                        board["countInput"],
                        board["badge"],
                        title_n and title_n.group(1),
                        str(inbox),
                    }
                    if missing or len(agree) != 1 or board["countPaused"] != str(args.paused):
                        failures.append(f"{line}; missing {missing}")
                    context.close()
            context = browser.new_context(base_url=base)
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            page = context.new_page()
            old = made_ids["rejected"][0]
            for label, query in (("its id", old), ("a word", "zebrafish")):
                page.goto(f"/history?q={query}")
                took = page.evaluate(
                    "() => { const t = performance.getEntriesByType('navigation')[0];"
                    " return t.responseEnd - t.requestStart; }"
                )
                found = page.locator(f"a[href='/tasks/{old}']").count() > 0
                print(
                    f"history search by {label}: found={found} in {took:.0f} ms (request->response)"
                )
                if not found:
                    failures.append(f"history search by {label} did not find {old}")
            page.screenshot(path=str(shots / "history.png"))
            browser.close()
    finally:
        daphne.terminate()
        daphne.wait(timeout=30)
    print(f"screenshots: {shots}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
