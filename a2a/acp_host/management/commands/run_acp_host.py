"""`manage.py run_acp_host`: the supervisor of hosted ACP agents (a2a/acp_host/supervisor.py).

`manage.py serve` and `make scale-out` start it when agents are configured
(TASKDECK_ACP_AGENTS); several may run side by side.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.management.base import BaseCommand

from a2a.acp_host import config
from a2a.acp_host.supervisor import Supervisor
from a2a.checks import PROCESS_CHECKS


class Command(BaseCommand):
    help = "Run hosted ACP agents' sessions (the ACP host's supervisor)."
    requires_system_checks = PROCESS_CHECKS  # it serves no page (a2a/checks.py)

    def handle(self, *args: Any, **options: Any) -> None:
        if not config.agents():
            self.stderr.write("no hosted ACP agents are configured (TASKDECK_ACP_AGENTS); idling")
        asyncio.run(Supervisor().serve())
