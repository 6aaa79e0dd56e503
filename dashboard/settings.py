"""Taskdeck settings, driven by the environment.

Embedded default: SQLite + in-memory channel layer, one process.
Scale-out: DATABASE_URL (PostgreSQL via psycopg 3) and REDIS_URL (channels-redis).
DEBUG is off unless TASKDECK_DEBUG=1. The secret key comes from DJANGO_SECRET_KEY;
`make run` generates a development one into var/ (never used elsewhere).
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from a2a import conf

# Every TASKDECK_* variable is declared in a2a/conf.py (type, default, bounds, meaning) and
# read here, once: a value it cannot use stops start-up, naming the variable.
_environment = conf.read(os.environ)
site = _environment.site

BASE_DIR = conf.BASE_DIR
VAR_DIR = Path(site.var_dir)

DEBUG = site.debug
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set. `make run` generates a development key; "
        "in production set it to a long random value."
    )

ALLOWED_HOSTS = site.allowed_hosts
CSRF_TRUSTED_ORIGINS = site.csrf_trusted_origins

# Daphne's app does one thing: `manage.py runserver` becomes an ASGI server (WebSockets
# included). Importing it installs Twisted's reactor, 0.27 s of every process's start-up
# that no other command uses (workers, the scheduler, the ACP door; `serve` imports Daphne
# itself): so it is installed for `runserver` only. docs/testing.md, "Start-up".
DAPHNE_APP = ["daphne"] if sys.argv[1:2] == ["runserver"] else []

INSTALLED_APPS = [
    *DAPHNE_APP,
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
    "a2a.alerts",  # operator alerts: email and an outgoing webhook
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


# SQLite reads the database file through a memory map: a page comes from the operating
# system's cache without a read() call each, and the mapped pages are shared by every
# connection on the machine (no copy per connection). Without it a call's reads grew with
# the database: GetTask 1.5 → 2.1 ms, pause + resume 7.4 → 10.6 ms from empty to 100,000
# tasks (bench/scale.py; docs/production.md, "SQLite at 100,000 tasks, mapped"). Builds
# cap it (commonly at about 2 GB); past the cap, pages are read as before.
SQLITE_MMAP_BYTES = 1 << 31


def embedded_sqlite(name: str | Path) -> dict:
    """The SQLite database `make run` uses, at `name`: every SQLite Taskdeck opens gets it.

    IMMEDIATE: concurrent writers queue on the lock instead of failing at once; the backend
    queues them on a flock beside the file (its docstring says why). WAL lets readers go on
    while a writer commits; synchronous=NORMAL is WAL's durable-on-checkpoint setting; the
    file is read through a memory map (SQLITE_MMAP_BYTES). A
    `DATABASE_URL=sqlite:///…` gets the same, not Django's plain backend: without them one
    file served by several processes fails writes with "database is locked"
    (docs/production.md, "SQLite (the embedded default)")."""
    return {
        "ENGINE": "dashboard.sqlite_backend",
        "NAME": name,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}"
            ),
        },
        "CONN_MAX_AGE": None,
    }


DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        if DATABASES["default"]["NAME"] == ":memory:":
            raise ImproperlyConfigured(
                "DATABASE_URL names an in-memory SQLite database: each process would have "
                "its own, empty one. Name a file (sqlite:////path/to/taskdeck.sqlite3) or "
                "leave DATABASE_URL unset for var/taskdeck.sqlite3."
            )
        named = Path(DATABASES["default"]["NAME"])
        DATABASES["default"] = {
            **embedded_sqlite(named),
            "TEST": {"NAME": named.with_name(f"test-{named.name}")},
        }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # channels' live server otherwise connects to a doubled test_test_… name
        DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}"}
        if site.pg_prepare:
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
            **embedded_sqlite(VAR_DIR / "taskdeck.sqlite3"),
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
REDIS_SECONDS = _environment.taskdeck["REDIS_SECONDS"]


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
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if site.behind_tls_proxy else None
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = site.secure_cookies

# --- Safe defaults (docs/production.md, "Security"): on in every mode -----------------------
# Debug pages (and error reports) hide URL passwords, API and bearer tokens wherever they
# appear — DATABASE_URL, REDIS_URL (also inside CHANNEL_LAYERS), request headers, locals —
# besides what secret-sounding names hold. `manage.py serve` (make run) also refuses to
# listen on anything but loopback while DEBUG is on.
DEFAULT_EXCEPTION_REPORTER_FILTER = "dashboard.security.SecretsFilter"
DEFAULT_EXCEPTION_REPORTER = "dashboard.security.SecretsReporter"

# Sign-in throttling (django-axes) on /login/ and /admin/login/ (dashboard/auth_backends.py
# says why): after TASKDECK_LOGIN_FAILURE_LIMIT failures for one user name from one address,
# or TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT from one address for any names, sign-ins of that
# pair (that address) stop for TASKDECK_LOGIN_COOLOFF_MINUTES and get a 429 page; other
# names at the address, and the name from other addresses, still sign in. Counts live in the
# database, shared by every web process; operators release a lockout at /lockouts. The
# address is the TCP peer; X-Forwarded-For is read only from TASKDECK_TRUSTED_PROXIES
# (docs/production.md), so a client cannot choose the address it is counted under.
AUTHENTICATION_BACKENDS = [
    "dashboard.auth_backends.LoginThrottle",  # refuses locked-out attempts; signs no one in
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = site.login_failure_limit
AXES_COOLOFF_TIME = timedelta(minutes=site.login_cooloff_minutes)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the pair, together
AXES_HANDLER = "dashboard.auth_backends.PairAndAddressHandler"  # + the per-address bound
AXES_CLIENT_IP_CALLABLE = "dashboard.auth_backends.client_address"
AXES_LOCKOUT_CALLABLE = "dashboard.auth_backends.lockout_response"  # locked_out.html
TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT = site.login_address_failure_limit
TASKDECK_TRUSTED_PROXIES = site.trusted_proxies
AXES_HTTP_RESPONSE_CODE = 429

# Idle sessions end: a signed-in session lasts TASKDECK_SESSION_IDLE_MINUTES (default 60)
# after its last request; every request renews it. An hour: this console pauses and
# cancels production work, so an unattended browser should not stay signed in all day,
# while a live page that is in use keeps itself signed in (fragment fetches are requests).
SESSION_COOKIE_AGE = round(site.session_idle_minutes * 60)
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
PRODUCTION = site.production
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
    SECURE_SSL_REDIRECT = site.ssl_redirect
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = site.hsts_seconds
    SECURE_HSTS_INCLUDE_SUBDOMAINS = site.hsts_include_subdomains
    SECURE_HSTS_PRELOAD = site.hsts_preload
    # hashed, compressed, cached for good (dashboard/static_files.py; needs collectstatic)
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "dashboard.static_files.Storage"},
    }
# --- Production (end) ---------------------------------------------------------------------------

# --- Email -------------------------------------------------------------------------------
# Django's SMTP backend, for operator alerts (a2a/alerts; docs/production.md, "Alerts").
EMAIL_HOST = site.email_host
EMAIL_PORT = site.email_port
EMAIL_HOST_USER = site.email_user
EMAIL_HOST_PASSWORD = site.email_password
EMAIL_USE_TLS = site.email_tls
EMAIL_TIMEOUT = 10  # an SMTP server that hangs cannot hold a worker
DEFAULT_FROM_EMAIL = SERVER_EMAIL = site.email_from

# --- Taskdeck -----------------------------------------------------------------------------
# Taskdeck's own settings, nested by part (top level, RATES, ACP, ACP_HOST, RUNTIME, VIEW,
# PUSH): a2a/conf.py declares each (variable, default, bounds, meaning), and code reads
# them through its typed sections (`conf.RUNTIME.lease_seconds`). Override them here or in
# tests as a dict, as before; a key left out reads as its default.
TASKDECK = _environment.taskdeck
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
        "a2a": {"handlers": ["console"], "level": site.log_level},
    },
}
