"""Taskdeck settings, driven by the environment.

Embedded default: SQLite + in-memory channel layer, one process.
Scale-out: DATABASE_URL (PostgreSQL via psycopg 3) and REDIS_URL (channels-redis).
DEBUG is off unless TASKDECK_DEBUG=1. The secret key comes from DJANGO_SECRET_KEY;
`make run` generates a development one into var/ (never used elsewhere).
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TASKDECK_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [v.strip() for v in os.environ.get(name, default).split(",") if v.strip()]


DEBUG = env_bool("TASKDECK_DEBUG")
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set. `make run` generates a development key; "
        "in production set it to a long random value."
    )

ALLOWED_HOSTS = env_list("TASKDECK_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("TASKDECK_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",  # sign-in throttling (Security, below)
    "csp",  # Content-Security-Policy (its system checks)
    "channels",
    "rest_framework",
    "django_tasks",
    "django_tasks_db",
    "a2a",
    "a2a.runtime",
    "a2a.push",
    "a2a.acp_door",
    "a2a.acp_host",
    "a2a.grpc_door",  # `manage.py run_grpc`: the A2A 1.0 gRPC binding
    "agui",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # before WhiteNoise, so every response carries them (static files and redirects too)
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.http.ConditionalGetMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # last (django-axes): turns a locked-out sign-in into the lockout page
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # channels' live server otherwise connects to a doubled test_test_… name
        DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}"}
        if env_bool("TASKDECK_PG_PREPARE", True):
            # Server-side binding lets psycopg prepare a statement the fifth time a
            # connection runs it: PostgreSQL then skips parsing and planning it (the hot
            # path's reads are one SQL text each, a2a/prepared.py). Django leaves it off
            # for transaction-mode poolers; set TASKDECK_PG_PREPARE=0 behind one
            # (docs/production.md).
            DATABASES["default"].setdefault("OPTIONS", {}).update(
                {"server_side_binding": True, "prepare_threshold": 5}
            )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "dashboard.sqlite_backend",
            "NAME": VAR_DIR / "taskdeck.sqlite3",
            # IMMEDIATE: concurrent writers queue on the lock instead of failing at once;
            # the backend queues them on a flock beside the file (its docstring says why)
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
            },
            "CONN_MAX_AGE": None,
            "TEST": {"NAME": VAR_DIR / "test-taskdeck.sqlite3"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channel layer and cache: Redis when REDIS_URL is set ---------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# The most one Redis call may hold a request or a worker (TASKDECK["REDIS_SECONDS"]): an
# after-commit announcement or AG-UI poke (a2a/notify.py) and a rate-limit count
# (a2a/rate_limits.py) each give up after this. A frozen Redis thus adds at most twice it
# to a request (one count, one announcement), and then next to nothing for a second: both
# stop asking after a failure (a2a.notify.Breaker). The database is the truth; Redis only
# wakes waiters early (they poll meanwhile) and shares rate-limit counts (they lapse).
REDIS_SECONDS = float(os.environ.get("TASKDECK_REDIS_SECONDS", 0.1))


def redis_channel_layers(url: str) -> dict:
    """CHANNEL_LAYERS on the Redis at `url` (tests that own a Redis use it too).

    The pub/sub layer of channels_redis, not its default one: Taskdeck's messages are
    wake-ups (the database holds the truth), so what the default layer adds — messages
    kept in Redis for a channel until it reads them, group memberships kept in sorted
    sets — is cost without use. A group_send there is a PUBLISH (one round trip) instead
    of two to four round trips and a Lua script: measured on this machine, 0.11 ms of
    the sender's CPU instead of 0.28 ms for a group nobody listens to, 0.18 ms instead of
    0.63 ms for one with a listener; a blocking send makes seven of them. A message
    published while nobody waits is dropped, which a wake-up may be: a2a.notify.Listener
    keeps its receive pending across its timeouts, so none is dropped between two waits.

    No socket_timeout: a Listener's receive waits for seconds by design; a2a.notify
    bounds every call instead (REDIS_SECONDS on the write path). The connect timeout
    bounds a Listener's join when packets are dropped, not refused."""
    return {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_connect_timeout": 2}]},
        }
    }


def redis_caches(url: str, seconds: float = REDIS_SECONDS) -> dict:
    """CACHES on the Redis at `url`: every connect and read gives up after `seconds`.

    Django hands redis-py a pool of its own, so redis-py retries nothing: one timeout per
    command, and a2a.rate_limits fails open on the first."""
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": seconds, "socket_timeout": seconds},
        }
    }


if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(REDIS_URL)
    # rate-limit counts (a2a/rate_limits.py), shared by every process; per process without
    CACHES = redis_caches(REDIS_URL)
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Auth, i18n, static -------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "board"
LOGOUT_REDIRECT_URL = "login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True  # serve from app/static dirs without collectstatic in dev

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "UNAUTHENTICATED_USER": None,
}

# --- Security (production values; DEBUG relaxes nothing here) ------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the dashboard's JS reads it for fetch()
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TASKDECK_BEHIND_TLS_PROXY") else None
)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("TASKDECK_SECURE_COOKIES")

# --- Safe defaults (docs/production.md, "Security"): on in every mode -----------------------
# Debug pages (and error reports) hide URL passwords, API and bearer tokens wherever they
# appear — DATABASE_URL, REDIS_URL (also inside CHANNEL_LAYERS), request headers, locals —
# besides what secret-sounding names hold. `manage.py serve` (make run) also refuses to
# listen on anything but loopback while DEBUG is on.
DEFAULT_EXCEPTION_REPORTER_FILTER = "dashboard.security.SecretsFilter"
DEFAULT_EXCEPTION_REPORTER = "dashboard.security.SecretsReporter"

# Sign-in throttling (django-axes) on /login/ and /admin/login/: after
# TASKDECK_LOGIN_FAILURE_LIMIT failures for one account (from any address) or from one
# address (for any account), sign-ins stop for TASKDECK_LOGIN_COOLOFF_MINUTES and get a
# 429 page. Counts live in the database, shared by every web process. The address is
# REMOTE_ADDR: behind a proxy run Daphne with --proxy-headers, and have the proxy replace
# X-Forwarded-For (docs/production.md), or every client shares the proxy's address.
AUTHENTICATION_BACKENDS = [
    "dashboard.auth_backends.LoginThrottle",  # refuses locked-out attempts; signs no one in
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("TASKDECK_LOGIN_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("TASKDECK_LOGIN_COOLOFF_MINUTES", 15)))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own
AXES_LOCKOUT_CALLABLE = "dashboard.auth_backends.lockout_response"  # locked_out.html
AXES_HTTP_RESPONSE_CODE = 429

# Idle sessions end: a signed-in session lasts TASKDECK_SESSION_IDLE_MINUTES (default 60)
# after its last request; every request renews it. An hour: this console pauses and
# cancels production work, so an unattended browser should not stay signed in all day,
# while a live page that is in use keeps itself signed in (fragment fetches are requests).
SESSION_COOKIE_AGE = round(float(os.environ.get("TASKDECK_SESSION_IDLE_MINUTES", 60)) * 60)
SESSION_SAVE_EVERY_REQUEST = True

# Content-Security-Policy (django-csp): scripts, styles and connections from this origin
# only. No inline <script>, style="" or on…= attributes anywhere (JavaScript lives in
# static/js, styles in static/css; setting element.style from a script is allowed).
# connect-src 'self' covers fetch() and, by CSP 3, ws:/wss: to the same host and port
# (the live view's /ws/agui/).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# Permissions-Policy (django-permissions-policy): no page may use these browser features.
PERMISSIONS_POLICY = {
    feature: []
    for feature in (
        "accelerometer", "autoplay", "camera",
        "display-capture", "encrypted-media", "fullscreen", "geolocation", "gyroscope",
        "hid", "idle-detection", "magnetometer", "microphone", "midi", "payment",
        "picture-in-picture", "publickey-credentials-get", "screen-wake-lock", "serial",
        "usb", "xr-spatial-tracking",
    )
}  # fmt: skip

# --- Production: TASKDECK_PRODUCTION=1 (begin) ------------------------------------------------
# One switch for running behind a TLS-terminating proxy (docs/production.md): HTTPS only
# (redirect, HSTS, secure cookies), the proxy's X-Forwarded-Proto trusted, and what must
# not keep its development value refused at startup. With it, `manage.py check --deploy
# --fail-level WARNING` reports nothing (tests/test_deploy.py).
PRODUCTION = env_bool("TASKDECK_PRODUCTION")
if PRODUCTION:
    _refused = []
    if DEBUG:
        _refused.append("TASKDECK_DEBUG must be off")
    if (
        len(SECRET_KEY) < 50
        or len(set(SECRET_KEY)) < 5
        or SECRET_KEY.startswith("django-insecure-")
    ):
        _refused.append(
            "DJANGO_SECRET_KEY must be 50+ random characters "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    if not os.environ.get("TASKDECK_ALLOWED_HOSTS"):
        _refused.append("TASKDECK_ALLOWED_HOSTS must name the public host name(s)")
    if _refused:
        raise ImproperlyConfigured("TASKDECK_PRODUCTION=1: " + "; ".join(_refused))
    # The proxy terminates TLS and sets X-Forwarded-Proto (and strips any a client sent).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("TASKDECK_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("TASKDECK_HSTS_SECONDS", 31_536_000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("TASKDECK_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("TASKDECK_HSTS_PRELOAD", True)
    # hashed, compressed, cached for good (dashboard/static_files.py; needs collectstatic)
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "dashboard.static_files.Storage"},
    }
# --- Production (end) ---------------------------------------------------------------------------

# --- Taskdeck -----------------------------------------------------------------------------
TASKDECK = {
    # Public base URL for the agent card; when empty it is built from the request.
    "PUBLIC_URL": os.environ.get("TASKDECK_PUBLIC_URL", ""),
    # Pause dialect for requests that don't choose one: "rfc" or "bindu".
    "DEFAULT_DIALECT": os.environ.get("TASKDECK_DEFAULT_DIALECT", "rfc"),
    # The gRPC binding's address as clients dial it (`host:port`, no scheme); the agent card
    # lists the gRPC interface when it is set. `manage.py serve` sets it for its children.
    "GRPC_ADDRESS": os.environ.get("TASKDECK_GRPC_ADDRESS", ""),
    # Where the web processes listen, for a process that has no request to read it from
    # (the gRPC binding's extended card); `manage.py serve` sets it. PUBLIC_URL wins.
    "WEB_URL": os.environ.get("TASKDECK_WEB_URL", ""),
    # Scopes granted to callers without an API key (empty: every call needs a key).
    "ANONYMOUS_SCOPES": env_list("TASKDECK_ANONYMOUS_SCOPES"),
    # A stream re-reads the task's event log at least this often (channel-layer
    # announcements wake it sooner).
    "STREAM_POLL_SECONDS": float(os.environ.get("TASKDECK_STREAM_POLL_SECONDS", 0.25)),
    # How long a blocking message/send (1.0 SendMessage by default) waits for the agent.
    "BLOCKING_SEND_SECONDS": float(os.environ.get("TASKDECK_BLOCKING_SEND_SECONDS", 25)),
    # Open streams, sockets and ACP sessions re-check their caller this often: a revoked
    # key or a logged-out session loses them within this bound.
    "REVALIDATE_SECONDS": float(os.environ.get("TASKDECK_REVALIDATE_SECONDS", 5)),
    # Which agent card a request without A2A-Version gets: "0.3" (the spec) or "1.0".
    "CARD_DEFAULT_VERSION": os.environ.get("TASKDECK_CARD_DEFAULT_VERSION", "0.3"),
    # Largest JSON-RPC request body accepted, in bytes.
    "MAX_REQUEST_BYTES": int(os.environ.get("TASKDECK_MAX_REQUEST_BYTES", 1_000_000)),
    # A request body must arrive within this many seconds (else 408): slow clients cannot
    # hold a server slot (dashboard/body_limit.py).
    "BODY_SECONDS": float(os.environ.get("TASKDECK_BODY_SECONDS", 30)),
    # Per API key and minute: new tasks, and re-subscriptions (a2a/rate_limits.py; 0: off).
    "RATES": {
        "create": int(os.environ.get("TASKDECK_RATE_CREATE", 120)),
        "resync": int(os.environ.get("TASKDECK_RATE_RESYNC", 60)),
    },
    # A messageId its caller (tenant) already sent within this many hours returns the
    # first task instead of new work (a2a/services/receipts.py; 0: off).
    "IDEMPOTENCY_HOURS": float(os.environ.get("TASKDECK_IDEMPOTENCY_HOURS", 24)),
    # The most one Redis call on a request's or a worker's path may take (see REDIS_SECONDS
    # above; TASKDECK_REDIS_SECONDS).
    "REDIS_SECONDS": REDIS_SECONDS,
    # Agents (modules with SKILL and `async def run(ctx)`); each is a skill on the card.
    "AGENTS": [
        "a2a.runtime.agents.approval",
        "a2a.runtime.agents.ci_wait",
        "a2a.runtime.agents.scheduled",
        "a2a.runtime.agents.batch",
        "a2a.runtime.agents.budget",
        "a2a.runtime.agents.tck",  # the A2A conformance kit's scripted agent
        # more agent modules, comma-separated (your own agents, or test agents)
        *env_list("TASKDECK_EXTRA_AGENTS"),
    ],
    "DEFAULT_SKILL": os.environ.get("TASKDECK_DEFAULT_SKILL", "approval"),
    # The ACP door (`manage.py acp`, docs/acp.md).
    "ACP": {
        # Largest JSON-RPC line accepted on stdin, in bytes (larger ones get -32600).
        "MAX_LINE_BYTES": int(os.environ.get("TASKDECK_ACP_MAX_LINE_BYTES", 1_000_000)),
        # A session re-reads its tasks' event log at least this often (announcements on
        # the channel layer wake it sooner).
        "POLL_SECONDS": float(os.environ.get("TASKDECK_ACP_POLL_SECONDS", 0.25)),
        # How long a client has to answer a permission request or a form before the
        # question stays open as text (the next prompt answers it).
        "ASK_SECONDS": float(os.environ.get("TASKDECK_ACP_ASK_SECONDS", 3600)),
    },
    # Hosted ACP agents (`manage.py run_acp_host`, docs/acp-hosting.md): third-party ACP
    # agents as skills, configured as editors configure them (a2a/acp_host/config.py).
    "ACP_HOST": {
        # A JSON file of agents: {"agent_servers": {name: {command, args, env, ...}}}.
        "AGENTS_FILE": os.environ.get("TASKDECK_ACP_AGENTS", ""),
        "AGENTS": {},  # the same, in settings (tests, Python deployments)
        # A supervisor holds a session this long without renewing it (a killed one's
        # sessions are taken over after this).
        "LEASE_SECONDS": float(os.environ.get("TASKDECK_ACP_LEASE_SECONDS", 15)),
        # How often a supervisor looks for work without being rung, and a held session
        # checks its task for a pause or a cancel during a turn.
        "POLL_SECONDS": float(os.environ.get("TASKDECK_ACP_POLL_SECONDS", 0.25)),
        # A turn with no message from the agent for this long is cancelled, then stopped.
        "TURN_SECONDS": float(os.environ.get("TASKDECK_ACP_TURN_SECONDS", 600)),
        # The most text one turn may write; beyond, the turn is cancelled (a flooding agent).
        "MAX_TURN_BYTES": int(os.environ.get("TASKDECK_ACP_MAX_TURN_BYTES", 2_000_000)),
        # How long an agent may take to start and answer initialize, session/new, load,
        # resume or suspend before its process is stopped (60 s: `npx -y` may download it
        # first); a prompt is watched by TURN_SECONDS instead.
        "REQUEST_SECONDS": float(os.environ.get("TASKDECK_ACP_REQUEST_SECONDS", 60)),
        # The most sessions (agent processes) one supervisor holds; run more supervisors
        # for more.
        "MAX_SESSIONS": int(os.environ.get("TASKDECK_ACP_MAX_SESSIONS", 50)),
        # Where sessions run when their agent names no cwd (a directory per task), and the
        # agents' stderr logs. Not under VAR_DIR: an agent with a shell of its own must not
        # find Taskdeck's SQLite database and keys beside its working directory.
        "SESSIONS_DIR": os.environ.get(
            "TASKDECK_ACP_SESSIONS_DIR",
            str(Path(tempfile.gettempdir()) / f"taskdeck-acp-sessions-{os.getuid()}"),
        ),
    },
    "RUNTIME": {
        # How long a worker's claim on a task lasts without a heartbeat (a dead worker's
        # task is taken over after this).
        "LEASE_SECONDS": float(os.environ.get("TASKDECK_LEASE_SECONDS", 15)),
        # How often a running task is checked for pause/cancel (interrupt latency).
        "POLL_SECONDS": float(os.environ.get("TASKDECK_POLL_SECONDS", 0.1)),
        # Blocking sends run inline agents (INLINE = True) in the web process that took
        # them (a2a/runtime/inline.py); 0 sends every run to the workers.
        "INLINE": os.environ.get("TASKDECK_INLINE_RUNS", "1") != "0",
        "SCHEDULER_INTERVAL": float(os.environ.get("TASKDECK_SCHEDULER_INTERVAL", 0.25)),
        # A wanted run whose job has not started after this long is queued again.
        "REQUEUE_SECONDS": float(os.environ.get("TASKDECK_REQUEUE_SECONDS", 60)),
        # Multiplies demo agents' delays (1 = watchable by a person; tests use less).
        "DELAY_SCALE": float(os.environ.get("TASKDECK_AGENT_DELAY_SCALE", 1.0)),
        # Workers write a beat this often; one silent for DEAD_SECONDS is dead: its task is
        # taken over and its job row marked, without waiting for the lease.
        "BEAT_SECONDS": float(os.environ.get("TASKDECK_BEAT_SECONDS", 1.0)),
        "DEAD_SECONDS": float(os.environ.get("TASKDECK_DEAD_SECONDS", 4.0)),
        # A run hit by an infrastructure fault (database, channel layer) is retried after
        # RETRY_SECONDS, doubled per fault in a row, at most RETRY_MAX_SECONDS.
        "RETRY_SECONDS": float(os.environ.get("TASKDECK_RETRY_SECONDS", 0.5)),
        "RETRY_MAX_SECONDS": float(os.environ.get("TASKDECK_RETRY_MAX_SECONDS", 30)),
        # Finished job rows (and beats of workers gone) are deleted after this long.
        "JOB_RETENTION_HOURS": float(os.environ.get("TASKDECK_JOB_RETENTION_HOURS", 24)),
        # Processes on this machine wake each other at once (a new job for the workers; task
        # news for the web process without Redis) through UNIX sockets in this directory
        # (a2a/localwake.py); "off": they find out by polling.
        "WAKE_DIR": os.environ.get("TASKDECK_WAKE_DIR", str(VAR_DIR / "wake")),
    },
    # The AG-UI live view (/view/tasks, docs/agui.md "How big the view gets"): open tasks,
    # plus finished ones for FINISHED_MINUTES (at most FINISHED_MAX, newest first); older
    # finished tasks leave it (a `remove` delta) and stay a query away. A socket's opening
    # STATE_SNAPSHOT holds at most SNAPSHOT_BYTES (capped below the WebSocket server's 1 MiB
    # message limit); a larger view is sent truncated, and the snapshot says so.
    "VIEW": {
        "FINISHED_MINUTES": float(os.environ.get("TASKDECK_VIEW_FINISHED_MINUTES", 60)),
        "FINISHED_MAX": int(os.environ.get("TASKDECK_VIEW_FINISHED_MAX", 200)),
        "SNAPSHOT_BYTES": int(os.environ.get("TASKDECK_VIEW_SNAPSHOT_BYTES", 512 * 1024)),
    },
    "PUSH": {
        # Webhooks may point at loopback, private and link-local addresses (tests, local
        # conformance runs). Off in production: clients must not aim Taskdeck inward.
        "ALLOW_PRIVATE": env_bool("TASKDECK_PUSH_ALLOW_PRIVATE"),
        # A notification is tried this many times, waiting BACKOFF_SECONDS, then twice as
        # long after each failure (at most MAX_BACKOFF_SECONDS), then given up.
        "MAX_ATTEMPTS": int(os.environ.get("TASKDECK_PUSH_MAX_ATTEMPTS", 8)),
        "BACKOFF_SECONDS": float(os.environ.get("TASKDECK_PUSH_BACKOFF_SECONDS", 1.0)),
        "MAX_BACKOFF_SECONDS": float(os.environ.get("TASKDECK_PUSH_MAX_BACKOFF_SECONDS", 300)),
        # Per phase (connect, send, wait for the answer) of one webhook request.
        "TIMEOUT_SECONDS": float(os.environ.get("TASKDECK_PUSH_TIMEOUT_SECONDS", 5)),
        "MAX_CONFIGS_PER_TASK": int(os.environ.get("TASKDECK_PUSH_MAX_CONFIGS_PER_TASK", 10)),
    },
}
# Background jobs: Django's Tasks API (django-tasks backport) on the database backend, so
# a job is written in the same transaction as the change that wants it.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
DATA_UPLOAD_MAX_MEMORY_SIZE = TASKDECK["MAX_REQUEST_BYTES"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "filters": {"redis_outage": {"()": "dashboard.log_filters.RedisOutage"}},
    "loggers": {
        "django.request": {"handlers": ["console"], "level": "ERROR"},
        # a Redis outage is survived: one warning line, not an error with a traceback
        "channels_redis.pubsub": {"filters": ["redis_outage"]},
        "a2a": {"handlers": ["console"], "level": os.environ.get("TASKDECK_LOG_LEVEL", "INFO")},
    },
}
