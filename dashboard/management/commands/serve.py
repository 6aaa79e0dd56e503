"""`manage.py serve`: Daphne, agent workers and the scheduler as one command.

`make run` uses it so one command gives a working Taskdeck. Each part is its own process
(as in a scale-out deployment); if one dies unexpectedly the others are stopped and the
command exits non-zero rather than limping on without, say, a scheduler.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")


class Command(BaseCommand):
    help = "Run the web server, agent workers and the scheduler together."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--port",
            default="8000",
            help="port, or comma-separated ports for several web processes (scale-out)",
        )
        parser.add_argument("--workers", type=int, default=2, help="agent worker processes")

    def handle(self, *args, host: str, port: str, workers: int, **options):
        ports = [int(p) for p in str(port).split(",") if p.strip()]
        commands = {}
        for p in ports:
            daphne = [sys.executable, "-m", "daphne", "-b", host, "-p", str(p)]
            commands[f"web-{p}"] = [*daphne, "dashboard.asgi:application"]
        for i in range(workers):
            commands[f"worker-{i + 1}"] = [
                sys.executable, MANAGE, "db_worker", "--interval", "0.2", "--no-reload",
            ]  # fmt: skip
        commands["scheduler"] = [sys.executable, MANAGE, "run_scheduler"]
        # own sessions: a Ctrl+C reaches only this command, which stops each child once
        procs = {
            name: subprocess.Popen(cmd, start_new_session=True) for name, cmd in commands.items()
        }
        urls = ", ".join(f"http://{host}:{p}/" for p in ports)
        self.stdout.write(
            f"Taskdeck on {urls} with {workers} workers and a scheduler "
            f"(pids {', '.join(f'{n}={p.pid}' for n, p in procs.items())})"
        )
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        failed = None
        while not stopping and failed is None:
            failed = next((n for n, p in procs.items() if p.poll() is not None), None)
            time.sleep(0.5)
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        if failed is not None:
            self.stderr.write(f"{failed} exited with {procs[failed].returncode}; stopped all")
            sys.exit(1)
