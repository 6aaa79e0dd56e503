"""What `manage.py serve` knows about its children, for `GET /healthz` to show.

`serve` (dashboard/supervisor.py) restarts a child that dies and gives up on one that keeps
dying; the web processes are its children, so they cannot ask it. It writes what it knows
to a small JSON file on every change, and names the file to every child in
TASKDECK_SERVE_STATUS; /healthz reads it on each request (a2a/health.py).

Why a file and not the database: the supervisor then needs no database connection of its
own (it has none today), what it says stays readable while the database is down (which is
exactly when an operator asks), writing it costs no transaction on SQLite's single writer,
and it needs no migration. It is written whole to a temporary file and renamed over the old
one, so a reader sees the previous state or the new one, never half of either. Its name
carries the first web port, so two `serve`s sharing one var dir (`make run` beside
`make scale-out`) keep separate files; `serve` removes it when it stops.

    {"supervisor": 4242, "updatedAt": "2026-11-28T00:20:00+00:00", "status": "ok",
     "children": [{"name": "worker-1", "pid": 4250, "state": "running", "restarts": 1,
                   "lastExit": "signal SIGKILL"}, ...]}

A child's state: "starting" (spawned during start-up), "running", "restarting" (dead,
waiting out its backoff), "gave-up" (died too often: no longer restarted), "stopped".
The file's status: "ok" (all running), "starting" (start-up not over), "restarting" (one is
dead and due back) or "degraded" (one was given up on). The reader adds "gone" when the
supervisor itself is no longer alive (killed with SIGKILL: its children serve on,
unsupervised).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STATES = ("starting", "running", "restarting", "gave-up", "stopped")


def overall(children: Iterable[Mapping[str, Any]]) -> str:
    states = {c["state"] for c in children}
    if "gave-up" in states:
        return "degraded"
    if "restarting" in states:
        return "restarting"
    if "starting" in states:
        return "starting"
    return "ok"


def write_status(path: Path, supervisor: int, children: list[dict[str, Any]]) -> None:
    """Replace the file at `path` with this state, atomically (rename)."""
    body = {
        "supervisor": supervisor,
        "updatedAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "status": overall(children),
        "children": children,
    }
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(body, out)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def read_status(path: str) -> dict[str, Any] | None:
    """The supervisor's last word, or None when there is no file to read (the process was
    not started by `serve`, or the file is gone). A supervisor that no longer runs reads as
    status "gone"."""
    if not path:
        return None
    try:
        body = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("supervisor"), int):
        return None
    if not _alive(body["supervisor"]):
        body["status"] = "gone"
    return body
