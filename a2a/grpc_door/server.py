"""The gRPC server process: both services on one grpc.aio server, until SIGTERM or SIGINT.

Plain HTTP/2 (no TLS), like the web processes: in production a proxy that speaks gRPC
(HTTP/2 end to end) terminates TLS in front of it, and TASKDECK_GRPC_ADDRESS names the
address clients dial there. Requests larger than TASKDECK_MAX_REQUEST_BYTES are refused
by gRPC itself (RESOURCE_EXHAUSTED), as the JSON-RPC door answers 413.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

import grpc

from a2a import conf

from . import protos
from .binding import method_handlers

# Open streams get this long to end on their own when the process is told to stop; then
# they are cancelled (`manage.py serve` waits 15 s for its children).
GRACE_SECONDS = 5.0


def address(host: str, port: int) -> str:
    """host:port, an IPv6 literal in brackets (what gRPC clients dial)."""
    host = host.strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def build(bind: str) -> tuple[grpc.aio.Server, int]:
    """The server with both services, bound to `bind`; the port it got (for port 0)."""
    limit = conf.TASKDECK.max_request_bytes
    # so_reuseport off: grpcio turns it on, and a second server on a port already taken would
    # start without an error and quietly share its connections with the first
    server = grpc.aio.server(
        options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 0)]
    )
    for service in protos.SERVICES:
        handlers = method_handlers(service)
        # registered as the generated add_*_to_server registers them
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service.full_name, handlers),)
        )
        server.add_registered_method_handlers(service.full_name, handlers)
    try:
        port = server.add_insecure_port(bind)
    except RuntimeError as exc:  # grpc's way of saying the address is taken or invalid
        raise OSError(f"cannot listen on {bind}: {exc}") from None
    return server, port


async def serve(host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve until SIGTERM / SIGINT; `ready(address)` once it listens."""
    server, bound = build(address(host, port))
    await server.start()
    ready(address(host, bound))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(GRACE_SECONDS)
