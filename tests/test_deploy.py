"""Production settings (TASKDECK_PRODUCTION=1): `manage.py check --deploy` reports nothing,
the switch refuses development values, and a request shows what it turns on (redirect to
HTTPS, HSTS, secure cookies, the proxy's X-Forwarded-Proto trusted).

Each case runs in its own process: settings are read once, at startup. None touches the
suite's database (each process is configured from scratch, with its own SQLite file or a
PostgreSQL address it never connects to): SQLite lane only (`any_database`)."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import unconfigured_environ

ROOT = Path(__file__).resolve().parents[1]
HOST = "taskdeck.example.com"

pytestmark = pytest.mark.any_database


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = unconfigured_environ()
    env.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        TASKDECK_PRODUCTION="1",
        TASKDECK_ALLOWED_HOSTS=HOST,
        TASKDECK_VAR_DIR=str(tmp_path),  # nothing written into the checkout's var/
        DATABASE_URL="postgres://taskdeck@db.internal:5432/taskdeck",  # not connected to
        REDIS_URL="redis://redis.internal:6379/0",
    )
    env.update(extra)
    return env


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_deploy_passes_with_production_settings(tmp_path):
    done = _manage(_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout, done.stdout


def test_without_the_switch_check_deploy_warns(tmp_path):
    """What the switch fixes: the same check fails on development settings."""
    env = _env(tmp_path)
    del env["TASKDECK_PRODUCTION"]
    done = _manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"DJANGO_SECRET_KEY": "too-short"}, "DJANGO_SECRET_KEY must be 50+"),
        ({"DJANGO_SECRET_KEY": "django-insecure-" + "x" * 60}, "DJANGO_SECRET_KEY must be 50+"),
        ({"TASKDECK_DEBUG": "1"}, "TASKDECK_DEBUG must be off"),
        ({"TASKDECK_ALLOWED_HOSTS": ""}, "TASKDECK_ALLOWED_HOSTS must name"),
    ],
)
def test_production_refuses_development_values(tmp_path, change, complaint):
    done = _manage(_env(tmp_path, **change), "check")
    assert done.returncode != 0
    assert "TASKDECK_PRODUCTION=1:" in done.stderr and complaint in done.stderr, done.stderr


PROBE = """
import django
django.setup()
from django.test import Client

c = Client()
plain = c.get("/.well-known/agent-card.json", HTTP_HOST="taskdeck.example.com")
print("plain", plain.status_code, plain.get("Location"))
tls = c.get(
    "/login/", HTTP_HOST="taskdeck.example.com", HTTP_X_FORWARDED_PROTO="https"
)
print("tls", tls.status_code, tls.get("Strict-Transport-Security"))
cookie = tls.cookies.get("csrftoken")
print("csrf-cookie-secure", bool(cookie and cookie["secure"]))
"""


def test_production_redirects_to_https_and_sends_hsts(tmp_path):
    env = _env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert lines["plain"] == f"301 https://{HOST}/.well-known/agent-card.json"
    assert lines["tls"] == "200 max-age=31536000; includeSubDomains; preload"
    assert lines["csrf-cookie-secure"] == "True"


# --- Debug pages never face the network (issue 12, safe defaults) --------------------------
# DEBUG shows settings, source and request data to whoever gets an error page; `make run`
# turns it on, so `serve` (which `make run` calls) refuses any address but loopback with it.


def _dev_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = _env(tmp_path, **{"TASKDECK_DEBUG": "1", **extra})
    for name in ("TASKDECK_PRODUCTION", "DATABASE_URL", "REDIS_URL"):
        env.pop(name)
    return env


@pytest.mark.parametrize("host", ["0.0.0.0", "taskdeck.lan"])
def test_serve_refuses_a_non_loopback_address_while_debug_is_on(tmp_path, host):
    """The real command, not a dry run: it must stop before starting any process."""
    done = _manage(_dev_env(tmp_path), "serve", "--host", host, "--port", "0", "--workers", "0")
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Taskdeck on" not in done.stdout  # nothing was started
    assert f"Refusing to serve on {host} with DEBUG on" in done.stderr, done.stderr
    assert "TASKDECK_DEBUG=0" in done.stderr and "HOST=127.0.0.1" in done.stderr


@pytest.mark.parametrize(
    ("host", "debug", "allowed"),
    [
        ("127.0.0.1", True, True),
        ("127.0.0.2", True, True),
        ("localhost", True, True),
        ("::1", True, True),
        ("[::1]", True, True),
        ("0.0.0.0", False, True),
        ("0.0.0.0", True, False),
        ("::", True, False),
        ("192.168.1.20", True, False),
        ("10.0.0.5", True, False),
    ],
)
def test_the_rule_serve_applies(settings, host, debug, allowed):
    """The host rule itself, in this process (the command runs it before anything else)."""
    from django.core.management.base import CommandError

    from dashboard.management.commands.serve import refuse_public_debug

    settings.DEBUG = debug
    if allowed:
        refuse_public_debug(host)
    else:
        with pytest.raises(CommandError, match="Refusing to serve"):
            refuse_public_debug(host)


def test_serve_check_starts_nothing_and_says_so(tmp_path):
    allowed = _manage(
        _dev_env(tmp_path, TASKDECK_DEBUG="0"), "serve", "--host", "0.0.0.0", "--check"
    )
    refused = _manage(_dev_env(tmp_path), "serve", "--host", "0.0.0.0", "--check")
    assert allowed.returncode == 0 and "Refusing" not in allowed.stderr, allowed.stderr
    assert refused.returncode != 0 and "Refusing to serve" in refused.stderr


def test_make_run_on_a_public_address_refuses_before_touching_anything(tmp_path):
    """`make run HOST=0.0.0.0`: refused with how to run instead, before migrating or seeding
    (the stamp is taken as up to date: this checks the recipe, not the install)."""
    stamp = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    env = _dev_env(tmp_path)
    env.pop("TASKDECK_DEBUG")  # make run turns it on by default
    done = subprocess.run(
        ["make", "--no-print-directory", "-o", f".venv/.installed-{stamp}", "run",
         "HOST=0.0.0.0", "PORT=8791"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Refusing to serve on 0.0.0.0 with DEBUG on" in done.stderr, done.stderr
    assert "TASKDECK_DEBUG=0" in done.stderr
    assert not list(tmp_path.glob("*.sqlite3")) and "Taskdeck demo" not in done.stdout


# --- Several web processes on one port (`serve --web N`, `make run` uses 2) ---------------


def _listening_inodes(port: int) -> set[str]:
    """Inodes of the sockets listening on `port` (state 0A in /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                cols = row.split()
                if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] == "0A":
                    found.add(cols[9])
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def test_serve_runs_several_web_processes_on_one_port_each_with_its_own_socket(tmp_path):
    """`--web 2`: two Daphne processes, each listening on the port with a socket of its
    own (SO_REUSEPORT: the kernel spreads connections over them), and calls answered."""
    env = _dev_env(tmp_path, TASKDECK_DEBUG="0", TASKDECK_ALLOWED_HOSTS="127.0.0.1")
    assert _manage(env, "migrate", "--noinput", "-v0").returncode == 0
    token = _manage(env, "create_api_key", "web", "--scopes", "read").stdout.split()[-1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port), "--web", "2",
         "--workers", "0", "--grpc-port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        banner = serve.stdout.readline()
        assert "2 web processes per port" in banner, banner
        pids = [int(p) for p in re.findall(r"web-\d+-\d=(\d+)", banner)]
        assert len(pids) == 2, banner
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}})
        headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
        # each Daphne says when it serves on the socket handed to it: wait for both
        ready = 0
        while ready < 2:
            line = serve.stdout.readline()
            assert line, "serve ended before its web processes listened"
            ready += f"Listening on TCP address 127.0.0.1:{port}" in line
        answers = []
        for _ in range(5):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/a2a/", body, {**headers, "Content-Type": "application/json"})
            answers.append(json.loads(conn.getresponse().read()))
            conn.close()
        listening = _listening_inodes(port)
        assert len(listening) == 2, listening  # a socket each, not one shared
        for pid in pids:
            assert _socket_inodes(pid) & listening, f"web process {pid} does not listen"
        assert answers and all(a["result"]["tasks"] == [] for a in answers), answers[:2]
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    assert serve.returncode == 0


# --- The gRPC binding beside the web processes (`serve --grpc-port`) ---------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


def test_serve_runs_the_grpc_binding_and_tells_every_child_its_address(tmp_path):
    """A gRPC process answers on --grpc-port with the same keys as the web; the children's
    environment keeps a TASKDECK_GRPC_ADDRESS that was given (the public address)."""
    import grpc

    from a2a.grpc_door.protos import a2a_pb2, a2a_pb2_grpc

    public = "grpc.taskdeck.example.com:443"
    env = _dev_env(
        tmp_path,
        TASKDECK_DEBUG="0",
        TASKDECK_ALLOWED_HOSTS="127.0.0.1",
        TASKDECK_GRPC_ADDRESS=public,
    )
    assert _manage(env, "migrate", "--noinput", "-v0").returncode == 0
    token = _manage(env, "create_api_key", "web", "--scopes", "read").stdout.split()[-1]
    port, grpc_port = _free_port(), _free_port()
    serve = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port),
         "--workers", "0", "--grpc-port", str(grpc_port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        banner = serve.stdout.readline()
        assert f"gRPC on 127.0.0.1:{grpc_port}" in banner, banner
        pids = dict(re.findall(r"(web-\d+|grpc)=(\d+)", banner))
        while f"gRPC: A2A 1.0 on 127.0.0.1:{grpc_port}" not in (line := serve.stdout.readline()):
            assert line, "serve ended before its gRPC process listened"
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            listed = stub.ListTasks(
                a2a_pb2.ListTasksRequest(), metadata=[("authorization", f"Bearer {token}")]
            )
        assert list(listed.tasks) == [] and listed.page_size == 50
        for name in (f"web-{port}", "grpc"):
            assert _environ(int(pids[name]))["TASKDECK_GRPC_ADDRESS"] == public, name
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    assert serve.returncode == 0


@pytest.mark.parametrize(
    ("host", "grpc_port", "given", "address"),
    [
        ("127.0.0.1", 50051, None, "127.0.0.1:50051"),
        ("::1", 50052, None, "[::1]:50052"),
        ("0.0.0.0", 50051, "grpc.example.com:443", "grpc.example.com:443"),
        ("127.0.0.1", 0, None, None),  # no gRPC process: no address
    ],
)
def test_the_grpc_address_serve_gives_its_children(host, grpc_port, given, address):
    from dashboard.management.commands.serve import child_environment

    environ = {"PATH": "/bin", **({"TASKDECK_GRPC_ADDRESS": given} if given else {})}
    env = child_environment(host, grpc_port, environ)
    assert env.get("TASKDECK_GRPC_ADDRESS") == address and env["PATH"] == "/bin"


def test_serve_refuses_a_grpc_port_a_web_process_uses(tmp_path):
    done = _manage(
        _dev_env(tmp_path), "serve", "--port", "8001,8002", "--grpc-port", "8002", "--check"
    )
    assert done.returncode != 0 and "--grpc-port 8002" in done.stderr, done.stderr
    ok = _manage(_dev_env(tmp_path), "serve", "--port", "8001,8002", "--check")
    assert ok.returncode == 0 and "gRPC on port 50051" in ok.stdout, ok.stdout + ok.stderr


# --- Static files in production: hashed, compressed, cached for good ------------------------

STATIC_PROBE = """
import re
import django
django.setup()
from django.contrib.auth.models import User
from django.test import Client

https = {"HTTP_HOST": "taskdeck.example.com", "HTTP_X_FORWARDED_PROTO": "https"}
c = Client()
c.force_login(User.objects.create_user("ops", password="x" * 20))
page = c.get("/", **https).content.decode()
app = re.search(r'src="(/static/js/app\\.[0-9a-f]{12}\\.js)"', page).group(1)
module = re.search(r'data-module="(/static/js/board\\.[0-9a-f]{12}\\.js)"', page).group(1)
print("app", app)
print("module", module)
served = c.get(app, HTTP_ACCEPT_ENCODING="gzip, br", **https)
print("cache", served["Cache-Control"])
print("encoding", served.get("Content-Encoding"))
plain = b"".join(c.get(app, **https).streaming_content).decode()
print("imports", " ".join(sorted(set(re.findall(r'from "(\\./[^"]+)"', plain)))))
"""


def test_production_static_files_are_hashed_compressed_and_cached_for_good(tmp_path):
    """collectstatic (as docs/production.md says) writes hashed, compressed copies; the
    pages name the hashed app.js and page module, whose imports are rewritten to hashed
    names (one instance of each module); they are served immutable and compressed."""
    env = _env(tmp_path)
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name)
    for step in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
        done = _manage(env, *step)
        assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [sys.executable, "-c", STATIC_PROBE], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    got = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert "immutable" in got["cache"] and "max-age=315360000" in got["cache"], got
    assert got["encoding"] in ("gzip", "br"), got
    imports = got["imports"].split()
    assert imports and all(re.fullmatch(r"\./\w+\.[0-9a-f]{12}\.js", i) for i in imports), got
    assert (tmp_path / "staticfiles" / "staticfiles.json").exists()


def test_serve_tells_its_children_where_the_web_processes_listen():
    """The gRPC process has no request to read a base URL from: its extended card names the
    other bindings under TASKDECK_WEB_URL, unless one was given."""
    from dashboard.management.commands.serve import child_environment

    env = child_environment("127.0.0.1", 50051, {}, web_port=8000)
    assert env["TASKDECK_WEB_URL"] == "http://127.0.0.1:8000"
    given = {"TASKDECK_WEB_URL": "https://td.example"}
    assert child_environment("::1", 0, given, web_port=8000)["TASKDECK_WEB_URL"] == (
        "https://td.example"
    )


SQLITE_PROBE = """
from django.db import connection
print(connection.settings_dict["ENGINE"])
with connection.cursor() as cursor:
    print(cursor.execute("PRAGMA journal_mode").fetchone()[0])
    print(cursor.execute("PRAGMA synchronous").fetchone()[0])
"""


def test_a_sqlite_database_url_gets_the_embedded_databases_settings(tmp_path):
    """DATABASE_URL=sqlite:///… is the embedded database at another path: WAL, the
    writer queue beside the file, synchronous=NORMAL (1), not Django's plain backend."""
    env = _env(tmp_path, TASKDECK_PRODUCTION="0", DATABASE_URL=f"sqlite:///{tmp_path}/td.db")
    env.pop("REDIS_URL")
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup()\n{SQLITE_PROBE}"], cwd=ROOT,
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["dashboard.sqlite_backend", "wal", "1"]
    assert (tmp_path / "td.db").exists()


def test_an_in_memory_sqlite_database_url_is_refused_at_start_up(tmp_path):
    env = _env(tmp_path, TASKDECK_PRODUCTION="0", DATABASE_URL="sqlite://:memory:")
    done = _manage(env, "check")
    assert done.returncode != 0
    assert "in-memory SQLite database" in done.stderr
