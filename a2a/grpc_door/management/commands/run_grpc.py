"""`manage.py run_grpc --host H --port P`: the A2A 1.0 gRPC binding in a process of its own
(`manage.py serve` starts one beside the web processes; docs/protocol.md, "gRPC binding").

Port 0 takes a free port; the line printed once it listens names the address, so a
supervisor or a test learns it without guessing."""

from __future__ import annotations

import asyncio

from django.core.management.base import BaseCommand, CommandError

from a2a.checks import PROCESS_CHECKS


class Command(BaseCommand):
    help = "Serve the A2A 1.0 gRPC binding (and Taskdeck's pause extension service)."
    requires_system_checks = PROCESS_CHECKS  # it serves no page (a2a/checks.py)

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=50051, help="0: any free port")

    def handle(self, *args, host: str, port: int, **options):
        from a2a.grpc_door.server import serve  # the generated code is needed from here on

        def ready(address: str) -> None:
            self.stdout.write(f"gRPC: A2A 1.0 on {address}")
            self.stdout.flush()

        try:
            asyncio.run(serve(host, port, ready))
        except OSError as exc:
            raise CommandError(str(exc)) from exc
