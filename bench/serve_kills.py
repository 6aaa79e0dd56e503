"""`manage.py serve` under SIGKILL (dashboard/supervisor.py): each child of a `make run`-like
serve (two web processes on one port, two workers, the scheduler, gRPC, an ACP host) is
killed in turn; printed per child: how soon the web answered /healthz, how soon the child
ran again (a new pid in the status file; for gRPC, its port answering; for a web process,
its "Listening" line), then how long SIGTERM took to stop everything. SQLite in a
temporary var dir. Prints figures; asserts nothing.

    .venv/bin/python bench/serve_kills.py [--port 18540] [--grpc-port 18541]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _harness import ROOT, clean_env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=18540)
    parser.add_argument("--grpc-port", type=int, default=18541)
    args = parser.parse_args()
    port, grpc_port = args.port, args.grpc_port
    var = Path(tempfile.mkdtemp(prefix="serve-kills-"))
    env = clean_env()
    env.update(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50), TASKDECK_DEBUG="0", TASKDECK_VAR_DIR=str(var)
    )
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    log = var / "serve.log"
    with log.open("w") as out:
        serve = subprocess.Popen(
            [*manage, "serve", "--port", str(port), "--web", "2", "--workers", "2",
             "--grpc-port", str(grpc_port), "--acp-hosts", "1"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    status = var / f"serve-status-{port}.json"

    def children() -> dict:
        try:
            return {c["name"]: c for c in json.loads(status.read_text())["children"]}
        except (OSError, ValueError):
            return {}

    def web_answers() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def grpc_answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", grpc_port), timeout=1):
                return True
        except OSError:
            return False

    began = time.monotonic()
    while "serve: started" not in log.read_text():
        if serve.poll() is not None:
            sys.exit(log.read_text()[-3000:])
        time.sleep(0.1)
    print(f"load average {os.getloadavg()[0]:.1f}; started in {time.monotonic() - began:.1f} s")
    try:
        for name in [
            "worker-1",
            "scheduler",
            "grpc",
            "acp-host-1",
            f"web-{port}-1",
            f"web-{port}-2",
        ]:
            listening = log.read_text().count("Listening on TCP address")
            before = children()[name]
            os.kill(before["pid"], signal.SIGKILL)
            killed = time.monotonic()
            answered = back = None
            while (answered is None or back is None) and time.monotonic() - killed < 60:
                if answered is None and web_answers():
                    answered = time.monotonic() - killed
                child = children().get(name, {})
                if (
                    back is None
                    and child.get("state") == "running"
                    and child["pid"] != before["pid"]
                ):
                    if name == "grpc":
                        ready = grpc_answers()
                    elif name.startswith("web-"):
                        ready = log.read_text().count("Listening on TCP") > listening
                    else:
                        ready = True
                    if ready:
                        back = time.monotonic() - killed
                time.sleep(0.05)
            print(
                f"{name:16s} web answered after {answered:.2f} s, "
                f"child serving again after {back:.2f} s"
            )
            time.sleep(3)  # let the machine settle before the next kill
    finally:
        serve.send_signal(signal.SIGTERM)
        stopping = time.monotonic()
        serve.wait(60)
        print(f"SIGTERM: serve exited {serve.returncode} after {time.monotonic() - stopping:.1f} s")


if __name__ == "__main__":
    main()
