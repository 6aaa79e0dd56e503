"""`manage.py serve`: Daphne, agent workers, the scheduler, the gRPC binding and (when ACP
agents are configured to be hosted) the ACP host's supervisor, as one command.

`make run` uses it so one command gives a working Taskdeck. Each part is its own process
(as in a scale-out deployment), supervised (dashboard/supervisor.py): a port already taken
stops it before anything starts, naming the port; a child that exits during start-up stops
all, naming the child; one that dies later is restarted with backoff, and given up on when
it keeps dying (all stop only when no web process is left); SIGTERM or Ctrl+C stops every
child within --stop-grace. Its children's state is in a status file that /healthz shows
(a2a/supervision.py; docs/production.md, "Processes"). Separate
processes need no service to hear each other at once: on SQLite with the in-memory
layer they wake each other over UNIX sockets in var/wake/ (a2a/localwake.py): a new job
reaches an idle worker, and a worker's change the web process's streams, blocking sends
and dashboards. So workers poll the job table only every second, as a fallback.

The gRPC binding (`manage.py run_grpc`, A2A 1.0 over gRPC) runs in a process of its own on
--grpc-port (0: none). Every child learns its address as TASKDECK_GRPC_ADDRESS (the agent
card lists it), unless the environment already names one: the public address clients
dial, when a proxy stands in front.

With DEBUG on it listens on loopback only: a debug page shows settings, source and request
data to whoever gets one, so a non-loopback --host is refused (turn DEBUG off for that).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import signal
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from a2a import skills
from dashboard.supervisor import FD, Child, Policy, StartupFailed, Supervisor

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (bracketed or not) and localhost; any other name may resolve to
    anything, and 0.0.0.0 / :: mean every interface."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refuse_public_debug(host: str) -> None:
    if settings.DEBUG and not is_loopback(host):
        raise CommandError(
            f"Refusing to serve on {host} with DEBUG on: Django's debug pages show settings, "
            "source code and request data to anyone who can reach that address.\n"
            f"  Turn DEBUG off:  TASKDECK_DEBUG=0 make run HOST={host}  (and set "
            "TASKDECK_ALLOWED_HOSTS to the host name clients use), or\n"
            "  stay on loopback:  make run HOST=127.0.0.1  (the default)"
        )


def bound(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `port` for one of the web processes that share it (`--web N`),
    not yet listening: the web process listens on it once its application is loaded.

    Each gets its own socket, all bound with SO_REUSEPORT: the kernel spreads incoming
    connections over the listening ones evenly. (One socket accepted from by all, tried
    first, let the process that woke first take most of a burst of connections: 2
    processes served 283 GetTask/s against 248 for one.) Made here, before the child, so
    that Daphne needs no port-sharing option of its own. Only a listening socket takes
    connections, so one whose process is still loading Django gets none, and a dead
    process's socket leaves the group with it (`serve` keeps no copy): meanwhile the
    others take every connection, and a restarted process gets a new socket."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.set_inheritable(True)
    return sock


def refuse_taken(host: str, port: int, what: str) -> None:
    """Stop before anything starts when `port` is taken, naming it and who wanted it.

    Bound without SO_REUSEPORT, so a listener that set it (another `serve --web N`, a
    gRPC server) still counts as taking the port; SO_REUSEADDR so that connections of a
    stopped server still in TIME_WAIT do not."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM
    )[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise CommandError(
                f"port {port} ({what}) on {host} is not free: {exc.strerror}. Stop what "
                f"listens there (`ss -ltnp 'sport = :{port}'` shows it) or choose another "
                "port; nothing was started."
            ) from exc


def grpc_address(host: str, port: int) -> str:
    """host:port as gRPC clients dial it (an IPv6 literal in brackets)."""
    host = host.strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def child_environment(
    host: str, grpc_port: int, environ: Mapping[str, str], web_port: int = 0
) -> dict[str, str]:
    """The children's environment: this one, plus TASKDECK_GRPC_ADDRESS when a gRPC process
    runs and no address was given, and TASKDECK_WEB_URL (the first web port: where the
    gRPC process's extended card says the other bindings are, without a PUBLIC_URL)."""
    env = dict(environ)
    if grpc_port and not env.get("TASKDECK_GRPC_ADDRESS"):
        env["TASKDECK_GRPC_ADDRESS"] = grpc_address(host, grpc_port)
    if web_port and not env.get("TASKDECK_WEB_URL"):
        env["TASKDECK_WEB_URL"] = f"http://{grpc_address(host, web_port)}"
    return env


# Runs as the web process: the inherited socket becomes descriptor 3 and the environment
# names it, as systemd's socket activation does; the application is loaded (Django set up),
# then the socket listens, then Daphne runs in this process (argv: fd, Daphne's arguments).
# The socket may already be descriptor 3 (the lowest free one in `serve`): then it stays.
ADOPT = (
    "import os, socket, sys; fd = int(sys.argv[1]); "
    "fd != 3 and (os.dup2(fd, 3), os.close(fd)); "
    "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1', LISTEN_FDNAMES='web'); "
    "import importlib; sys.path.insert(0, '.'); "
    "importlib.import_module(sys.argv[-1].split(':')[0]); "
    "s = socket.socket(fileno=3); s.listen(1024); s.detach(); "
    "from daphne.cli import CommandLineInterface; CommandLineInterface().run(sys.argv[2:])"
)


def adopting(fd: str, family: int, application: str) -> list[str]:
    """A Daphne command that serves on the inherited socket `fd` (bound, not listening),
    handed over as systemd's socket activation does it (Twisted reads that, endpoint
    `systemd:`): LISTEN_PID must name the process itself, known only once it runs, hence
    ADOPT, which sets it, loads `application`, listens and runs Daphne's command line in
    the same process. (Daphne's own `--fd` builds an `fd:` endpoint this Twisted no longer
    has.)"""
    domain = "INET6" if family == socket.AF_INET6 else "INET"
    daphne = ["-e", f"systemd:domain={domain}:index=0", application]
    return [sys.executable, "-c", ADOPT, fd, *daphne]


class Command(BaseCommand):
    help = "Run the web server, agent workers, the scheduler and the gRPC binding together."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--port",
            default="8000",
            help="port, or comma-separated ports for several web processes (scale-out)",
        )
        parser.add_argument(
            "--web",
            type=int,
            default=1,
            help="web (Daphne) processes per port, sharing its listening socket (default 1)",
        )
        parser.add_argument("--workers", type=int, default=2, help="agent worker processes")
        parser.add_argument(
            "--grpc-port",
            type=int,
            default=50051,
            help="port of the A2A gRPC binding's process (default 50051; 0: no gRPC process)",
        )
        parser.add_argument(
            "--acp-hosts",
            type=int,
            default=None,
            help="supervisors of hosted ACP agents (default: 1 when TASKDECK_ACP_AGENTS "
            "configures any, else 0)",
        )
        parser.add_argument(
            "--check", action="store_true", help="check the options and exit, starting nothing"
        )
        d = Policy()
        parser.add_argument(
            "--restart-backoff",
            type=float,
            default=d.backoff,
            help=f"seconds before a dead child is restarted, doubling with each further death "
            f"within --give-up-window (default {d.backoff:g})",
        )
        parser.add_argument(
            "--restart-backoff-max",
            type=float,
            default=d.backoff_max,
            help=f"the longest backoff (default {d.backoff_max:g})",
        )
        parser.add_argument(
            "--give-up-after",
            type=int,
            default=d.give_up_after,
            help=f"exits within --give-up-window after which a child is no longer restarted "
            f"(default {d.give_up_after})",
        )
        parser.add_argument(
            "--give-up-window", type=float, default=d.window, help=f"(default {d.window:g} s)"
        )
        parser.add_argument(
            "--startup-seconds",
            type=float,
            default=d.startup_seconds,
            help="a child must stay up this long (and its port answer) for start-up to end; "
            f"an exit before that stops all (default {d.startup_seconds:g})",
        )
        parser.add_argument(
            "--stop-grace",
            type=float,
            default=d.stop_grace,
            help=f"on SIGTERM/SIGINT, seconds before children still running get SIGKILL "
            f"(default {d.stop_grace:g})",
        )

    def handle(
        self,
        *args,
        host: str,
        port: str,
        web: int,
        workers: int,
        grpc_port: int,
        acp_hosts: int | None,
        check: bool,
        restart_backoff: float,
        restart_backoff_max: float,
        give_up_after: int,
        give_up_window: float,
        startup_seconds: float,
        stop_grace: float,
        **options,
    ):
        refuse_public_debug(host)
        if web < 1:
            raise CommandError("--web must be at least 1")
        ports = [int(p) for p in str(port).split(",") if p.strip()]
        if grpc_port < 0 or (grpc_port and grpc_port in ports):
            raise CommandError(f"--grpc-port {grpc_port} must be 0 or a port no web process uses")
        if give_up_after < 1 or min(restart_backoff, give_up_window, stop_grace) < 0:
            raise CommandError("--give-up-after must be at least 1, the times at least 0")
        if check:
            grpc = f", gRPC on port {grpc_port}" if grpc_port else ""
            self.stdout.write(
                f"ok: would serve on {host} (DEBUG {'on' if settings.DEBUG else 'off'}){grpc}"
            )
            return
        for p in ports:
            refuse_taken(host, p, "web, --port")
        if grpc_port:
            refuse_taken(host, grpc_port, "gRPC, --grpc-port")
        children: list[Child] = []
        for p in ports:
            if web == 1:
                daphne = [sys.executable, "-m", "daphne", "-b", host, "-p", str(p)]
                children.append(
                    Child(
                        f"web-{p}",
                        [*daphne, "dashboard.asgi:application"],
                        binds=(host, p),
                        essential=True,
                    )
                )
                continue
            for i in range(web):
                family = socket.getaddrinfo(host.strip("[]"), p, type=socket.SOCK_STREAM)[0][0]
                children.append(
                    Child(
                        f"web-{p}-{i + 1}",
                        adopting(FD, family, "dashboard.asgi:application"),
                        listener=functools.partial(bound, host, p),
                        essential=True,
                    )
                )
        for i in range(workers):
            # the poll is only the fallback: the doorbell starts a new job at once
            children.append(Child(f"worker-{i + 1}", [
                sys.executable, MANAGE, "run_worker", "--interval", "1", "--no-reload",
            ]))  # fmt: skip
        children.append(Child("scheduler", [sys.executable, MANAGE, "run_scheduler"]))
        if acp_hosts is None:
            acp_hosts = 1 if skills.hosted() else 0  # the host registers them (a2a.skills)
        for i in range(acp_hosts):  # hosted ACP agents' sessions (a2a/acp_host)
            children.append(Child(f"acp-host-{i + 1}", [sys.executable, MANAGE, "run_acp_host"]))
        if grpc_port:
            children.append(Child("grpc", [
                sys.executable, MANAGE, "run_grpc", "--host", host, "--port", str(grpc_port),
            ], binds=(host, grpc_port)))  # fmt: skip
        env = child_environment(host, grpc_port, os.environ, web_port=ports[0])
        status_file = Path(settings.VAR_DIR) / f"serve-status-{ports[0]}.json"
        env["TASKDECK_SERVE_STATUS"] = str(status_file)
        supervisor = Supervisor(
            children,
            env=env,
            policy=Policy(
                backoff=restart_backoff,
                backoff_max=restart_backoff_max,
                give_up_after=give_up_after,
                window=give_up_window,
                startup_seconds=startup_seconds,
                stop_grace=stop_grace,
            ),
            log=self.say,
            status_file=status_file,
        )
        signal.signal(signal.SIGINT, supervisor.stop)
        signal.signal(signal.SIGTERM, supervisor.stop)
        try:
            try:
                supervisor.spawn()
            except StartupFailed as failed:
                raise CommandError(str(failed)) from None
            urls = ", ".join(f"http://{host}:{p}/" for p in ports)
            grpc = f", gRPC on {grpc_address(host, grpc_port)}" if grpc_port else ""
            self.stdout.write(
                f"Taskdeck on {urls} ({web} web process{'es' if web > 1 else ''} per port"
                f"{grpc}) with {workers} workers and a scheduler "
                f"(pids {', '.join(f'{c.name}={c.proc.pid}' for c in children)})"
            )
            self.stdout.flush()
            try:
                supervisor.wait_started()
            except StartupFailed as failed:
                raise CommandError(str(failed)) from None
            if not supervisor.stopping:
                self.say(f"serve: started; supervising {len(children)} processes ({status_file})")
            if supervisor.supervise() != 0:
                sys.exit(1)
        finally:
            supervisor.close()

    def say(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()
