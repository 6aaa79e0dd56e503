"""The status file `serve` writes and /healthz reads (a2a/supervision.py): written whole,
read back as written while its supervisor lives, "gone" once it is dead, nothing without a
file. (The file as a running `serve` writes it: tests/test_serve_supervisor.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

from a2a.supervision import read_status, write_status


def _child(name: str, state: str) -> dict:
    return {"name": name, "pid": 1, "state": state, "restarts": 0, "lastExit": None}


def test_the_status_reads_back_as_written_while_the_supervisor_lives(tmp_path):
    path = tmp_path / "serve-status-8000.json"
    write_status(path, os.getpid(), [_child("web-8000", "running"), _child("worker-1", "running")])
    status = read_status(str(path))
    assert status["status"] == "ok" and status["supervisor"] == os.getpid()
    assert [c["name"] for c in status["children"]] == ["web-8000", "worker-1"]
    write_status(path, os.getpid(), [_child("web-8000", "running"), _child("grpc", "restarting")])
    assert read_status(str(path))["status"] == "restarting"
    write_status(path, os.getpid(), [_child("web-8000", "running"), _child("grpc", "gave-up")])
    assert read_status(str(path))["status"] == "degraded"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_dead_supervisor_reads_as_gone(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    path = tmp_path / "status.json"
    write_status(path, int(dead.stdout), [_child("web-8000", "running")])
    assert read_status(str(path))["status"] == "gone"


def test_no_file_no_status(tmp_path):
    assert read_status("") is None
    assert read_status(str(tmp_path / "missing.json")) is None
    (tmp_path / "torn.json").write_text('{"supervisor": ')
    assert read_status(str(tmp_path / "torn.json")) is None
