"""Taskdeck's settings, each declared once: the environment variable that sets it, its type,
its default, its bounds and what it means.

How they flow: dashboard/settings.py reads the environment with `read(os.environ)`. Every
value is parsed and checked there, once, so a bad one stops any process at start-up (Daphne,
a worker, a management command) with the variable's name and the reason, all bad ones in
one ImproperlyConfigured. The parsed values go where Django keeps settings: Django's own
(`Site`: DEBUG, cookies, sign-in throttling…) and `settings.TASKDECK`, nested as before, so
pytest-django's `settings` fixture and `override_settings` keep changing them.

How code reads them: through the typed sections below, at call time —
`conf.RUNTIME.lease_seconds`, never `settings.TASKDECK[...]`. A read is a descriptor call
and two dict lookups (no parsing: the values were parsed at start-up; cheaper than reading
settings.TASKDECK was), and it sees a test's override at once; a key left out of an
overridden dict reads as its declared default, so defaults live here only. The kinds of
setting (what each parses and accepts) and the read itself are in a2a/setting_kinds.py.
The system checks (a2a/checks.py) check the values as Django holds them (Python
overrides too) against the same declarations.

Every variable is in the README's configuration table (tests/test_conf.py).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from a2a.lifecycle import Dialect
from a2a.setting_kinds import (
    Address,
    Agents,
    Environ,
    FernetKeys,
    Mapped,
    Names,
    Networks,
    Number,
    Refused,
    Relation,
    Section,
    Setting,
    Switch,
    Text,
    Url,
    Whole,
)

BASE_DIR = Path(__file__).resolve().parent.parent


def _var_dir(environ: Environ) -> str:
    return environ.get("TASKDECK_VAR_DIR", str(BASE_DIR / "var"))


def _call_threads(environ: Environ) -> int:
    # Daphne's own variable when it is set, else Python's default for an executor
    asgi_threads = environ.get("ASGI_THREADS", "")
    return int(asgi_threads) if asgi_threads.isdigit() else min(32, (os.cpu_count() or 1) + 4)


def _sessions_dir(environ: Environ) -> str:
    # Not under the var dir: an agent with a shell of its own must not find Taskdeck's
    # SQLite database and keys beside its working directory.
    return str(Path(tempfile.gettempdir()) / f"taskdeck-acp-sessions-{os.getuid()}")


BUILTIN_AGENTS = (
    "a2a.runtime.agents.approval",
    "a2a.runtime.agents.ci_wait",
    "a2a.runtime.agents.scheduled",
    "a2a.runtime.agents.batch",
    "a2a.runtime.agents.budget",
)


class Site(Section):
    """Django's own settings that Taskdeck's environment sets. dashboard/settings.py reads
    them from `read(...).site`; code reads Django's settings (settings.DEBUG…) as usual."""

    var_dir = Text("TASKDECK_VAR_DIR", _var_dir, "SQLite files and development secrets")
    debug = Switch("TASKDECK_DEBUG", False, "Django DEBUG (`serve` then listens on loopback)")
    allowed_hosts = Names(
        "TASKDECK_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"], "Django ALLOWED_HOSTS"
    )
    csrf_trusted_origins = Names("TASKDECK_CSRF_TRUSTED_ORIGINS", [], "Django's, comma-separated")
    pg_prepare = Switch(
        "TASKDECK_PG_PREPARE", True, "PostgreSQL: psycopg prepares statements run five times"
    )
    behind_tls_proxy = Switch(
        "TASKDECK_BEHIND_TLS_PROXY", False, "trust X-Forwarded-Proto from the proxy"
    )
    secure_cookies = Switch("TASKDECK_SECURE_COOKIES", False, "session and CSRF cookies: HTTPS")
    login_failure_limit = Whole(
        "TASKDECK_LOGIN_FAILURE_LIMIT", 5, "failed sign-ins before a lockout", at_least=1
    )
    login_address_failure_limit = Whole(
        "TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT",
        50,
        "failed sign-ins from one address, for any names, before it is locked out",
        at_least=1,
    )
    trusted_proxies = Networks(
        "TASKDECK_TRUSTED_PROXIES",
        [],
        "proxies whose X-Forwarded-For names the client (addresses or CIDRs)",
    )
    login_cooloff_minutes = Number(
        "TASKDECK_LOGIN_COOLOFF_MINUTES", 15, "how long a lockout lasts", more_than=0
    )
    session_idle_minutes = Number(
        "TASKDECK_SESSION_IDLE_MINUTES", 60, "a session ends after this long idle", more_than=0
    )
    production = Switch("TASKDECK_PRODUCTION", False, "production settings behind a TLS proxy")
    ssl_redirect = Switch("TASKDECK_SSL_REDIRECT", True, "production: redirect HTTP to HTTPS")
    hsts_seconds = Whole(
        "TASKDECK_HSTS_SECONDS", 31_536_000, "production: HSTS max-age", at_least=0
    )
    hsts_include_subdomains = Switch(
        "TASKDECK_HSTS_INCLUDE_SUBDOMAINS", True, "production: HSTS includeSubDomains"
    )
    hsts_preload = Switch("TASKDECK_HSTS_PRELOAD", True, "production: HSTS preload")
    # Django's SMTP mail backend (operator alerts' email channel, a2a/alerts)
    email_host = Text("TASKDECK_EMAIL_HOST", "localhost", "SMTP server for alert email")
    email_port = Whole("TASKDECK_EMAIL_PORT", 25, "its port", at_least=1)
    email_user = Text("TASKDECK_EMAIL_USER", "", "SMTP user (empty: no login)")
    email_password = Text("TASKDECK_EMAIL_PASSWORD", "", "SMTP password", secret=True)
    email_tls = Switch("TASKDECK_EMAIL_TLS", False, "SMTP with STARTTLS")
    email_from = Text(
        "TASKDECK_EMAIL_FROM", "taskdeck@localhost", "the From address of alert email"
    )
    log_level = Text(
        "TASKDECK_LOG_LEVEL",
        "INFO",
        "the level of the `a2a` loggers",
        choices=tuple(logging.getLevelNamesMapping()),
    )

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def values(self) -> Mapping[str, Any]:
        return self._values


class Process(Section):
    """Set per process in its environment and read there when used (secrets that are not
    Django settings): the values are never copied into settings."""

    api_key = Text("TASKDECK_API_KEY", "", "the API key `manage.py acp` acts as", secret=True)
    push_secret_keys = FernetKeys(
        "TASKDECK_PUSH_SECRET_KEYS", [], "Fernet keys sealing webhook secrets at rest", secret=True
    )

    def values(self) -> Mapping[str, Any]:
        return {s.key: s.from_env(os.environ) for s in self.declared()}


class Taskdeck(Section):
    """The top level of settings.TASKDECK."""

    public_url = Url("TASKDECK_PUBLIC_URL", "", "base URL of the agent card (empty: the request's)")
    default_dialect = Text(
        "TASKDECK_DEFAULT_DIALECT",
        Dialect.RFC.value,
        "pause dialect of requests that choose none",
        choices=tuple(d.value for d in Dialect),
    )
    # `manage.py serve` sets both for its children. The card lists the gRPC interface when
    # GRPC_ADDRESS is set; WEB_URL serves a process with no request to read its URL from
    # (the gRPC binding's extended card), and PUBLIC_URL wins over it.
    grpc_address = Address(
        "TASKDECK_GRPC_ADDRESS", "", "the gRPC binding's address as clients dial it"
    )
    web_url = Url(
        "TASKDECK_WEB_URL", "", "where the web processes listen, for processes with no request"
    )
    # `serve` names its status file to its children; /healthz shows it (a2a/supervision.py)
    serve_status = Text(
        "TASKDECK_SERVE_STATUS", "", "set by `serve`: the file where it says how its children are"
    )
    anonymous_scopes = Names(
        "TASKDECK_ANONYMOUS_SCOPES", [], "scopes of callers without an API key (none: refused)"
    )
    # dashboard/bulkops.py: one bulk action acts on this many tasks at most (a bigger
    # selection is refused with a message saying so), in transactions of BULK_BATCH
    bulk_max = Whole(
        "TASKDECK_BULK_MAX", 10_000, "the most tasks one bulk action acts on", at_least=1
    )
    bulk_batch = Whole(
        "TASKDECK_BULK_BATCH", 200, "tasks a bulk action changes per transaction", at_least=1
    )
    # where a confirmed bulk action runs: a thread of the web process, resumed by the
    # scheduler should the process die (the default), or in the request (the test suite)
    bulk_run = Text(
        "TASKDECK_BULK_RUN",
        "thread",
        "where a confirmed bulk action runs",
        choices=("thread", "inline"),
    )
    # dashboard/call_threads.py: the web process's threads for the A2A calls' work, and
    # how far below the process's CPU priority they run (lowered, the live view's threads
    # come first under load, at a cost in the writes' throughput: docs/production.md)
    call_threads = Whole(
        "TASKDECK_CALL_THREADS",
        _call_threads,
        "threads per web process that run the A2A calls' database work",
        at_least=1,
    )
    call_nice = Whole(
        "TASKDECK_CALL_NICE",
        0,
        "how many nice steps below its web process those threads run (0: at its priority)",
        at_least=0,
    )
    # dashboard/keepalive_limit.py: a client's connection is closed at its first answer
    # after this long, so the web processes sharing a port re-share long-lived clients
    http_keepalive_seconds = Number(
        "TASKDECK_HTTP_KEEPALIVE_SECONDS",
        5,
        "a client's HTTP connection is closed at its first answer after this long (0: never)",
        at_least=0,
    )
    stream_poll_seconds = Number(
        "TASKDECK_STREAM_POLL_SECONDS",
        0.25,
        "a task's streams (one shared reader) check its log this often",
        more_than=0,
    )
    # idle SSE streams (A2A's JSON-RPC and HTTP+JSON, AG-UI runs) send a comment this often
    # so that proxies and clients can tell a quiet stream from a dead one
    stream_keepalive_seconds = Number(
        "TASKDECK_STREAM_KEEPALIVE_SECONDS",
        15,
        "an idle SSE stream sends a keep-alive comment this often",
        more_than=0,
    )
    # a stream whose database is unreachable retries, sending keep-alives, for this long,
    # then ends with an error frame (docs/production.md, "Database outages")
    stream_outage_seconds = Number(
        "TASKDECK_STREAM_OUTAGE_SECONDS",
        30,
        "how long a stream waits out a database outage before it ends with an error",
        at_least=0,
    )
    blocking_send_seconds = Number(
        "TASKDECK_BLOCKING_SEND_SECONDS",
        25,
        "how long a blocking send waits for the agent",
        at_least=0,
    )
    # a revoked key or a logged-out session loses its streams, sockets and ACP sessions
    # within this bound; a verified key is remembered this long per process
    revalidate_seconds = Number(
        "TASKDECK_REVALIDATE_SECONDS",
        5,
        "open streams and sessions re-check their caller",
        more_than=0,
    )
    max_request_bytes = Whole(
        "TASKDECK_MAX_REQUEST_BYTES", 1_000_000, "largest request body", at_least=1
    )
    # else 408: slow clients cannot hold a server slot (dashboard/body_limit.py)
    body_seconds = Number(
        "TASKDECK_BODY_SECONDS", 30, "a request body must arrive within this", more_than=0
    )
    idempotency_hours = Number(
        "TASKDECK_IDEMPOTENCY_HOURS",
        24,
        "a repeated messageId returns the first task (0: off)",
        at_least=0,
    )
    # an announcement or a rate-limit count gives up after this (dashboard/settings.py,
    # REDIS_SECONDS, says why a frozen Redis then costs a request little)
    redis_seconds = Number(
        "TASKDECK_REDIS_SECONDS",
        0.1,
        "the longest one Redis call may take on a write's path",
        more_than=0,
    )
    agents = Agents(
        "TASKDECK_EXTRA_AGENTS",
        BUILTIN_AGENTS,
        "agent modules (SKILL and `async def run(ctx)`) besides the built-in ones",
        key="AGENTS",
    )
    default_skill = Text(
        "TASKDECK_DEFAULT_SKILL", "approval", "the skill of a task whose caller names none"
    )


class Rates(Section):
    """Per tenant and minute (a2a/rate_limits.py says who is counted; 0: off)."""

    key = "RATES"
    create = Whole("TASKDECK_RATE_CREATE", 120, "new tasks", key="create", at_least=0)
    resync = Whole("TASKDECK_RATE_RESYNC", 60, "re-subscriptions", key="resync", at_least=0)
    # per tenant, and every kind of caller (a dashboard user too): a2a/rate_limits.py
    socket = Whole(
        "TASKDECK_RATE_SOCKET", 60, "AG-UI socket opens per tenant", key="socket", at_least=0
    )

    def per_minute(self, what: str) -> int:
        """The limit on `what` ("create" | "resync" | "socket")."""
        return {"create": self.create, "resync": self.resync, "socket": self.socket}[what]


class AcpDoor(Section):
    """The ACP door (`manage.py acp`, docs/acp.md)."""

    key = "ACP"
    max_line_bytes = Whole(
        "TASKDECK_ACP_MAX_LINE_BYTES", 1_000_000, "largest JSON-RPC line on stdin", at_least=1
    )
    poll_seconds = Number(
        "TASKDECK_ACP_POLL_SECONDS",
        0.25,
        "a session re-reads its tasks' log this often",
        more_than=0,
    )
    ask_seconds = Number(
        "TASKDECK_ACP_ASK_SECONDS",
        3600,
        "how long a client has to answer a question",
        more_than=0,
    )
    background_seconds = Number(
        "TASKDECK_ACP_BACKGROUND_SECONDS",
        0,
        "a prompt's turn ends after this long while its task works on (0: it follows the task)",
        at_least=0,
    )


class AcpHost(Section):
    """Hosted ACP agents (`manage.py run_acp_host`, docs/acp-hosting.md)."""

    key = "ACP_HOST"
    agents_file = Text("TASKDECK_ACP_AGENTS", "", "a JSON file of hosted agents", key="AGENTS_FILE")
    agents = Mapped(None, lambda environ: {}, "hosted agents in Python settings")
    lease_seconds = Number(
        "TASKDECK_ACP_LEASE_SECONDS",
        15,
        "a supervisor holds a session this long unrenewed",
        more_than=0,
    )
    poll_seconds = Number(
        "TASKDECK_ACP_POLL_SECONDS",
        0.25,
        "a supervisor looks for free sessions this often",
        more_than=0,
    )
    turn_seconds = Number(
        "TASKDECK_ACP_TURN_SECONDS", 600, "a turn silent this long is cancelled", more_than=0
    )
    max_turn_bytes = Whole(
        "TASKDECK_ACP_MAX_TURN_BYTES", 2_000_000, "the most text one turn may write", at_least=1
    )
    # initialize, session/new, load, resume, suspend; 60 s: `npx -y` may download the agent
    # first. A prompt is watched by TURN_SECONDS instead.
    request_seconds = Number(
        "TASKDECK_ACP_REQUEST_SECONDS",
        60,
        "how long an agent may take to start and answer",
        more_than=0,
    )
    max_sessions = Whole(
        "TASKDECK_ACP_MAX_SESSIONS", 50, "the most sessions one supervisor holds", at_least=0
    )
    # an agent's process costs 40-60 MB whether it works or waits: one idle this long is
    # stopped, and started again (its session taken up) by the next message
    idle_seconds = Number(
        "TASKDECK_ACP_HOST_IDLE_SECONDS",
        300,
        "a hosted agent idle this long is stopped until its next message (0: never)",
        at_least=0,
    )
    sessions_dir = Text(
        "TASKDECK_ACP_SESSIONS_DIR", _sessions_dir, "where sessions without a cwd run"
    )


class Runtime(Section):
    """The agent runtime (docs/runtime.md)."""

    key = "RUNTIME"
    lease_seconds = Number(
        "TASKDECK_LEASE_SECONDS",
        15,
        "a worker's claim on a task lasts this long unrenewed",
        more_than=0,
    )
    poll_seconds = Number(
        "TASKDECK_POLL_SECONDS",
        0.1,
        "a running task is checked for pause/cancel this often",
        more_than=0,
    )
    # a2a/runtime/inline.py; off: every run goes to the workers
    inline = Switch(
        "TASKDECK_INLINE_RUNS",
        True,
        "blocking sends run INLINE agents in the web process",
        key="INLINE",
    )
    scheduler_interval = Number(
        "TASKDECK_SCHEDULER_INTERVAL", 0.25, "the scheduler's period", more_than=0
    )
    requeue_seconds = Number(
        "TASKDECK_REQUEUE_SECONDS",
        60,
        "a wanted run not started after this is queued again",
        more_than=0,
    )
    delay_scale = Number(
        "TASKDECK_AGENT_DELAY_SCALE", 1.0, "multiplies demo agents' delays", at_least=0
    )
    # a dead worker's task is taken over and its job row marked without waiting for the lease
    beat_seconds = Number(
        "TASKDECK_BEAT_SECONDS", 1.0, "workers write a beat this often", more_than=0
    )
    dead_seconds = Number(
        "TASKDECK_DEAD_SECONDS", 4.0, "a worker silent this long is dead", more_than=0
    )
    # doubled per fault in a row, at most RETRY_MAX_SECONDS
    retry_seconds = Number(
        "TASKDECK_RETRY_SECONDS", 0.5, "first retry after an infrastructure fault", more_than=0
    )
    retry_max_seconds = Number(
        "TASKDECK_RETRY_MAX_SECONDS", 30, "the longest wait between retries", more_than=0
    )
    job_retention_hours = Number(
        "TASKDECK_JOB_RETENTION_HOURS",
        24,
        "finished job rows are deleted after this",
        at_least=0,
    )
    # UNIX sockets through which the processes of one machine wake each other: a new job
    # for the workers, task news for a web process without Redis (a2a/localwake.py)
    wake_dir = Text(
        "TASKDECK_WAKE_DIR",
        lambda environ: str(Path(_var_dir(environ)) / "wake"),
        "where processes of one machine wake each other (`off`: they poll)",
    )


class View(Section):
    """The AG-UI live view (/view/tasks, docs/agui.md "How big the view gets"): open tasks,
    plus finished ones for FINISHED_MINUTES (at most FINISHED_MAX, newest first). A socket's
    opening STATE_SNAPSHOT holds at most SNAPSHOT_BYTES (agui.view caps it below the
    WebSocket server's 1 MiB message limit); a larger view is sent cut, and says so."""

    key = "VIEW"
    finished_minutes = Number(
        "TASKDECK_VIEW_FINISHED_MINUTES", 60, "a finished task stays this long", at_least=0
    )
    finished_max = Whole(
        "TASKDECK_VIEW_FINISHED_MAX", 200, "…and only among the newest this many", at_least=0
    )
    snapshot_bytes = Whole(
        "TASKDECK_VIEW_SNAPSHOT_BYTES",
        512 * 1024,
        "the most an opening snapshot weighs",
        at_least=1,
    )
    # dashboard/websocket_limits.py: a socket holding more unsent is closed (4008)
    socket_buffer_bytes = Whole(
        "TASKDECK_VIEW_SOCKET_BUFFER_BYTES",
        1024 * 1024,
        "a socket whose client holds back more than this unread is closed",
        at_least=1024,
    )
    # where the AG-UI projection runs after a writer's commit (agui/projection.py;
    # docs/design/projection-after-commit.md, D8): a thread of every process (the default),
    # or on the committing thread before the call returns (the test suite; a fallback)
    projection = Text(
        "TASKDECK_PROJECTION",
        "thread",
        "where the live view is projected after a commit",
        choices=("thread", "sync"),
    )
    # agui/retention.py: open tasks, tasks in the view and tasks a run streams keep theirs
    event_retention_hours = Number(
        "TASKDECK_AGUI_EVENT_RETENTION_HOURS",
        24,
        "the AG-UI log rows of a task that left the view go this long after it finished",
        at_least=0,
    )


class Push(Section):
    """Push notifications (webhooks)."""

    key = "PUSH"
    # for tests and local conformance runs; off in production: clients must not aim
    # Taskdeck at its own network (SSRF)
    allow_private = Switch(
        "TASKDECK_PUSH_ALLOW_PRIVATE", False, "webhooks may reach loopback and private hosts"
    )
    max_attempts = Whole(
        "TASKDECK_PUSH_MAX_ATTEMPTS", 8, "a notification is tried this many times", at_least=1
    )
    backoff_seconds = Number(
        "TASKDECK_PUSH_BACKOFF_SECONDS", 1.0, "the first wait after a failure", at_least=0
    )
    max_backoff_seconds = Number(
        "TASKDECK_PUSH_MAX_BACKOFF_SECONDS", 300, "the longest wait between tries", at_least=0
    )
    timeout_seconds = Number(
        "TASKDECK_PUSH_TIMEOUT_SECONDS", 5, "per phase of one webhook request", more_than=0
    )
    max_configs_per_task = Whole(
        "TASKDECK_PUSH_MAX_CONFIGS_PER_TASK", 10, "webhooks one task may have", at_least=0
    )


class Alerts(Section):
    """Operator alerts (a2a/alerts, docs/production.md "Alerts"): what is worth a person's
    attention, and where it is sent. No channel set: alerts are recorded and shown on the
    alerts page only."""

    key = "ALERTS"
    emails = Names("TASKDECK_ALERT_EMAILS", [], "who gets alert email (comma-separated)")
    webhook = Url("TASKDECK_ALERT_WEBHOOK", "", "an outgoing webhook (Slack-compatible) for alerts")
    approval_minutes = Number(
        "TASKDECK_ALERT_APPROVAL_MINUTES",
        30,
        "an approval waiting longer than this alerts (0: never)",
        at_least=0,
    )
    failed = Switch("TASKDECK_ALERT_FAILED", True, "a failed task alerts")
    lag_seconds = Number(
        "TASKDECK_ALERT_LAG_SECONDS",
        60,
        "the live view lagging longer than this alerts (0: never)",
        at_least=0,
    )
    max_attempts = Whole(
        "TASKDECK_ALERT_MAX_ATTEMPTS", 8, "an alert is tried this many times", at_least=1
    )
    backoff_seconds = Number(
        "TASKDECK_ALERT_BACKOFF_SECONDS", 5, "the first wait after a failed try", at_least=0
    )
    max_backoff_seconds = Number(
        "TASKDECK_ALERT_MAX_BACKOFF_SECONDS", 600, "the longest wait between tries", at_least=0
    )


# What code reads (each a live view of settings.TASKDECK).
TASKDECK = Taskdeck()
RATES = Rates()
ACP = AcpDoor()
ACP_HOST = AcpHost()
RUNTIME = Runtime()
VIEW = View()
PUSH = Push()
ALERTS = Alerts()
PROCESS = Process()
SECTIONS: tuple[type[Section], ...] = (
    Taskdeck,
    Rates,
    AcpDoor,
    AcpHost,
    Runtime,
    View,
    Push,
    Alerts,
)


def declared() -> Iterator[Setting[Any]]:
    """Every setting, in declaration order."""
    for section in (Site, Process, *SECTIONS):
        yield from section.declared()


# --- relations between settings ----------------------------------------------------------

RELATIONS = (
    Relation(
        Runtime.poll_seconds,
        Runtime.lease_seconds,
        lambda poll, lease: poll <= lease / 3,
        "must be at most a third of {second} ({b:g}): a running task renews its lease "
        "between two polls, every third of the lease",
    ),
    Relation(
        Runtime.beat_seconds,
        Runtime.dead_seconds,
        lambda beat, dead: beat < dead,
        "must be less than {second} ({b:g}): a worker beating this seldom would be taken for dead",
    ),
)


# --- reading the environment -------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """What the environment sets: Django's own settings and settings.TASKDECK."""

    site: Site
    taskdeck: dict[str, Any]


def read(environ: Environ) -> Reading:
    """Parse and check every setting the environment may set; ImproperlyConfigured naming
    each variable whose value is refused, and why."""
    problems: list[str] = []
    parsed: dict[Setting[Any], Any] = {}

    def value(setting: Setting[Any]) -> Any:
        try:
            found = setting.from_env(environ)
        except Refused as exc:
            problems.append(f"{setting.env}={setting.shown(environ.get(setting.env or ''))}: {exc}")
            found = setting.default_for(environ)
        else:
            if (why := setting.problem(found)) is not None:
                problems.append(
                    f"{setting.env}={setting.shown(environ.get(setting.env or ''))}: {why}"
                )
        parsed[setting] = found
        return list(found) if isinstance(found, list) else found

    site = {s.key: value(s) for s in Site.declared()}
    for s in Process.declared():
        value(s)
    taskdeck: dict[str, Any] = {}
    for section in SECTIONS:
        into = taskdeck if section.key is None else taskdeck.setdefault(section.key, {})
        for s in section.declared():
            into[s.key] = value(s)
    problems += [why for r in RELATIONS if (why := r.problem(parsed.__getitem__))]
    if problems:
        raise ImproperlyConfigured(
            "Taskdeck's environment has values it cannot use:\n  " + "\n  ".join(problems)
        )
    return Reading(site=Site(site), taskdeck=taskdeck)
