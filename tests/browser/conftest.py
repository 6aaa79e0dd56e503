"""Browser tests: Debian's Chromium driven by sync Playwright against a live Daphne, real
agent workers and the scheduler, on the test database.

Run in their own pytest process (`pytest tests/browser`): sync Playwright keeps an event
loop running in the main thread, which the async and ORM tests must not share; that is
also why Django's async-safety check is turned off here, and only here.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import Browser, Page, expect, sync_playwright

from a2a import services
from a2a.errors import TaskError
from a2a.lifecycle import TERMINAL, TransitionRefused
from a2a.models import Task
from tests.conftest import start_daphne, stop_daphne
from tests.dashboard.conftest import make_user, operator, viewer  # noqa: F401
from tests.runtime import hosting
from tests.runtime.conftest import (  # noqa: F401
    DIE_WITH_US,
    Processes,
    start,
    wait_idle,
    wait_jobs_finished,
    workers_running,
)
from tests.runtime.conftest import _env as runtime_env

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
# The two sizes issue 15 asks every dashboard feature to be tested at.
SIZES = [pytest.param((1440, 900), id="desktop"), pytest.param((390, 844), id="phone")]
OPS = services.Actor("operator", "teardown")


def pytest_collection_modifyitems(config, items):
    if not os.path.exists(CHROMIUM):
        skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing (make test installs it)")
        for item in items:
            item.add_marker(skip)


# A time of day as the pages show it (HH:MM); one on another day than today — a deadline
# after midnight, a pause just before it — carries its date (docs/dashboard.md)
CLOCK = r"(\d{4}-\d\d-\d\d )?\d\d:\d\d"


@pytest.fixture(scope="session", autouse=True)
def hosted_acp_agents(django_db_setup, tmp_path_factory) -> Iterator[Path]:
    """Hosted ACP agents (tests/runtime/hosting.py) in every process of the browser lane,
    as a deployment configures them: set before Daphne and the workers start (autouse and
    session-scoped, it comes first), with a supervisor of its own. Returns the agents
    file."""
    path, _ = hosting.write_agents(tmp_path_factory.mktemp("acp-host"))
    with hosting.configured(path, os.environ):
        log = open(tmp_path_factory.mktemp("acp-host-log") / "supervisor.log", "w")  # noqa: SIM115
        supervisor = subprocess.Popen(
            [*DIE_WITH_US, sys.executable, str(hosting.ROOT / "manage.py"), "run_acp_host"],
            cwd=hosting.ROOT, env=runtime_env(), stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield path
        finally:
            supervisor.terminate()
            supervisor.wait(timeout=20)
            log.close()


@pytest.fixture(scope="session")
def runtime(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Processes]:
    """Two workers and the scheduler for the whole browser session (tests/runtime's are
    its package's only)."""
    with workers_running(django_db_blocker, tmp_path_factory.mktemp("runtime-logs")) as procs:
        yield procs


# The site runs bulk actions as a deployment does (TASKDECK_BULK_RUN's default): on a
# thread of the web process after the confirmation's commit, the operation's page polling
# its progress. The rest of the suite runs them in the request (tests/settings.py), which
# here made the confirmation's navigation wait for all 500 cancels of the fleet test.
SITE_ENVIRON = {"TASKDECK_BULK_RUN": "thread"}


@pytest.fixture(scope="session")
def site(django_db_setup, django_db_blocker, runtime) -> Iterator[str]:
    """Daphne plus two workers and the scheduler, started before any browser (so no
    process is forked while Playwright's threads run)."""
    proc = start_daphne(django_db_blocker, environ=SITE_ENVIRON)
    yield f"http://127.0.0.1:{proc.port.value}"
    stop_daphne(proc)


@pytest.fixture(scope="session")
def browser(site) -> Iterator[Browser]:
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(autouse=True)
def settle(transactional_db, runtime, start) -> Iterator[None]:  # noqa: F811
    """After each test, stop whatever it started (from the browser too) and wait until no
    worker holds a task, so the database flush meets idle workers. (It depends on `start`
    so that it runs first: a task may finish between a check and a cancel, which `start`'s
    own teardown does not expect.)"""
    yield
    active = list(Task.objects.exclude(state__in=list(TERMINAL)).values_list("id", flat=True))
    for task_id in active:
        with contextlib.suppress(TaskError, TransitionRefused):
            services.cancel_task(task_id, actor=OPS, reason="test teardown")
    for task_id in Task.objects.values_list("id", flat=True):
        wait_idle(task_id)
    # ...and until no job row runs: a worker that dies on a flushed job row leaves every
    # later test of the session one worker fewer (CI once saw a task wait 30 s behind a
    # long batch)
    wait_jobs_finished()


_PAGES = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test reports, for each page it opened, what its AG-UI socket went
    through (live.js's stats: snapshots, deltas, resyncs, reconnects, the last statuses)
    and the page's last console lines: a flake seen once in CI is rarely understood from
    the assertion alone (the pages are still open: fixtures are torn down after this)."""
    report = yield
    if report.failed and call.when == "call":
        for n, (page, console) in enumerate(item.stash.get(_PAGES, [])):
            try:
                stats = page.evaluate("JSON.stringify(window.taskdeck?.live?.stats ?? null)")
            except Exception as exc:  # closed, navigated away, or no app.js on it
                stats = f"(not read: {exc.__class__.__name__})"
            lines = [f"url {page.url}", f"live.stats {stats}", *console[-20:]]
            report.sections.append((f"page {n + 1}", "\n".join(lines)))
    return report


@pytest.fixture
def open_as(browser, site, request) -> Iterator[Callable[..., Page]]:
    """open_as(user, "/path", zone=None, viewport=(1360, 900), scheme=None) -> a page in a
    fresh browser context signed in as `user` (its clock in the IANA time `zone` if given,
    else the machine's; its window `viewport` = (width, height) CSS pixels; its
    prefers-color-scheme "light" or "dark" if `scheme` is given). Any JavaScript error or
    alert() fails the test."""
    contexts = []
    problems: list[str] = []

    def open_page(
        user,
        path: str = "/",
        zone: str | None = None,
        viewport: tuple[int, int] = (1360, 900),
        scheme: str | None = None,
    ) -> Page:
        client = Client()
        client.force_login(user)
        context = browser.new_context(
            base_url=site,
            viewport={"width": viewport[0], "height": viewport[1]},
            timezone_id=zone,
            color_scheme=scheme,
        )
        context.add_cookies(
            [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site}]
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
        console: list[str] = []
        page.on("console", lambda m: console.append(f"console {m.type}: {m.text}"))
        request.node.stash.setdefault(_PAGES, []).append((page, console))
        page.goto(path)
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not problems, problems


def live(page: Page) -> None:
    """Wait until the page's AG-UI socket is live (it has its first snapshot)."""
    expect(page.locator("#conn")).to_have_attribute("data-status", "live")


def shot(page: Page, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def board_tools(page: Page) -> None:
    """Open the board's filters and bulk bar: on a phone they are folded behind one control
    (issue 29: tasks first). Waits until the board's script has run (live)."""
    live(page)
    tools = page.locator("#board-tools")
    if tools.get_attribute("open") is None:
        tools.locator("summary").click()
    expect(page.locator("#filters")).to_be_visible()
