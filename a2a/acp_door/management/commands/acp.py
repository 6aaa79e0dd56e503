"""`python manage.py acp`: Taskdeck as an ACP agent on stdin/stdout (what editors launch).

Identity: TASKDECK_API_KEY (or `authenticate`). The process talks to the same database and
channel layer as the web server (DATABASE_URL, REDIS_URL); agents run on the workers that
`make run` / `manage.py serve` start — or on `--workers N` started here for a standalone
editor setup. stdout carries protocol lines only; everything else goes to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

log = logging.getLogger("a2a.acp_door")
MANAGE = str(Path(settings.BASE_DIR) / "manage.py")


class Command(BaseCommand):
    help = "Serve Taskdeck as an Agent Client Protocol agent over stdio (for editors)."
    requires_system_checks: list[str] = []  # nothing may print before stdout is taken
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument(
            "--workers",
            type=int,
            default=0,
            help="also run N agent workers and a scheduler for as long as the editor is "
            "connected (a standalone setup; with `make run` the server's workers serve)",
        )

    def handle(self, *args, workers: int, **options):
        from a2a.acp_door.transport import take_stdout

        protocol_fd = take_stdout()
        logging.basicConfig(stream=sys.stderr, level=logging.INFO)
        helpers = _start_helpers(workers)
        try:
            asyncio.run(_serve(protocol_fd))
        except KeyboardInterrupt:
            pass
        finally:
            for proc in helpers:
                proc.terminate()
            for proc in helpers:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _start_helpers(workers: int) -> list[subprocess.Popen]:
    if workers <= 0:
        return []
    worker = [sys.executable, MANAGE, "run_worker", "--interval", "1", "--no-reload"]
    commands = [worker] * workers
    commands.append([sys.executable, MANAGE, "run_scheduler"])
    # stdout of the helpers goes to our stderr: the protocol stream stays clean
    return [subprocess.Popen(cmd, stdout=sys.stderr, start_new_session=True) for cmd in commands]


async def _serve(protocol_fd: int) -> None:
    from acp import run_agent

    from a2a.acp_door.connection import Door, max_line_bytes
    from a2a.acp_door.transport import stdio_transport

    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    door = await Door.from_environment()
    transport = await stdio_transport(protocol_fd, max_line=max_line_bytes())
    serving = asyncio.ensure_future(run_agent(door, transport, use_unstable_protocol=True))
    stop = asyncio.ensure_future(stopping.wait())
    guard = asyncio.ensure_future(door.guard())
    try:
        await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        guard.cancel()
        await door.close()
        for task in (serving, stop):
            task.cancel()
        await asyncio.gather(serving, stop, guard, return_exceptions=True)
        log.info("ACP client gone; tasks are left as they are")
