"""`manage.py run_scheduler`: fire due timeouts and recover runs of dead workers."""

import signal

from django.core.management.base import BaseCommand

from a2a import conf
from a2a.checks import PROCESS_CHECKS
from a2a.runtime import scheduler


def _interrupt(signum, frame):
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Fire resume deadlines and re-queue runs whose worker died."
    requires_system_checks = PROCESS_CHECKS  # it serves no page (a2a/checks.py)

    def add_arguments(self, parser):
        parser.add_argument(
            "--interval",
            type=float,
            default=conf.RUNTIME.scheduler_interval,
            help="seconds between sweeps",
        )

    def handle(self, *args, interval: float, **options):
        signal.signal(signal.SIGTERM, _interrupt)
        self.stdout.write(f"scheduler running, every {interval}s")
        try:
            scheduler.loop(interval)
        except KeyboardInterrupt:
            self.stdout.write("scheduler stopped")
