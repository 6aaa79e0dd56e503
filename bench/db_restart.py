"""A full PostgreSQL restart under open streams on every door (issue 31, "Done when" 3).

Runs Taskdeck on PostgreSQL + Redis (a fresh `taskdeck_bench` database: one Daphne, one
gRPC process, the projection in its thread as production runs it), opens on one working
task a JSON-RPC `tasks/resubscribe`, an HTTP+JSON `:subscribe`, a gRPC `SubscribeToTask`,
an AG-UI run (on a task of its own) and a dashboard socket (`/ws/agui/`), then restarts
the PostgreSQL *server* with `pg_ctlcluster … restart` while /a2a and gRPC are called every
0.1 s. Once the server is back, both tasks are completed; every stream must then deliver
the completion (or have ended with an error frame) within 10 s, and no /a2a answer during
the outage may be an HTML page.

It restarts the machine's shared PostgreSQL server: run it only where nothing else uses
it. Prints what each door did, with times; exits 1 if a door hung or answered HTML.

    .venv/bin/python bench/db_restart.py [--cluster 15/main]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from _harness import ROOT, configure, drop_bench_db, free_port, start_server

DONE = ("COMPLETED", "completed", "RUN_FINISHED", "STATE_DELTA")  # what a resumed stream shows
BOUND = 10.0  # seconds: each stream resumes or ends with an error within this


@dataclass
class Door:
    """What one stream saw: (seconds since the bench began, what) per frame or event."""

    name: str
    frames: list[tuple[float, str]] = field(default_factory=list)
    ended: str | None = None

    def saw(self, what: str) -> None:
        self.frames.append((time.monotonic() - T0, what))


T0 = time.monotonic()


def sse(door: Door, response, done_when) -> None:
    """Read an SSE body, noting comments, events and the end."""
    data: list[str] = []
    try:
        for line in response.iter_lines():
            if line.startswith(":"):
                door.saw("keep-alive")
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                payload = json.loads("".join(data))
                data.clear()
                door.saw(done_when(payload))
        door.ended = "closed"
    except Exception as exc:
        door.ended = f"{type(exc).__name__}: {exc}"
    door.saw(f"end ({door.ended})")


def rpc_state(p: dict) -> str:
    if "error" in p:
        return f"error {p['error']['code']} {p['error'].get('message')}"
    r = p.get("result", {})
    return "event " + str(r.get("status", {}).get("state") or r.get("kind"))


def rest_state(p: dict) -> str:
    if "error" in p:
        return f"error {p['error'].get('status')}"
    for key in ("task", "statusUpdate"):
        if key in p:
            return f"event {p[key].get('status', {}).get('state')}"
    return "event " + ",".join(p)


def agui_state(p: dict) -> str:
    return "event " + p.get("type", "?")


def grpc_stream(door: Door, stub, pb, md, task_id: str) -> None:
    import grpc

    try:
        for item in stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task_id), metadata=md):
            which = item.WhichOneof("payload")
            state = item.status_update.status.state if which == "status_update" else ""
            door.saw(f"event {which} {pb.TaskState.Name(state) if state else ''}".strip())
        door.ended = "closed"
    except grpc.RpcError as exc:
        door.ended = f"{exc.code().name}: {exc.details()}"
    door.saw(f"end ({door.ended})")


def socket(door: Door, url: str, token: str, stop: threading.Event) -> None:
    from websockets.sync.client import connect

    headers = {"Authorization": f"Bearer {token}", "Origin": "http://127.0.0.1"}
    try:
        with connect(url, additional_headers=headers, max_size=None) as ws:
            while not stop.is_set():
                try:
                    event = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                door.saw("event " + event["type"])
        door.ended = "closed by the bench"
    except Exception as exc:
        door.ended = f"{type(exc).__name__}: {exc}"
    door.saw(f"end ({door.ended})")


def poller(log: list, http, stub, pb, md, task_id: str, stop: threading.Event) -> None:
    """/a2a tasks/get and gRPC GetTask every 0.1 s: what each door answers meanwhile."""
    import grpc

    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    while not stop.is_set():
        at = time.monotonic() - T0
        try:
            r = http.post("/a2a/", json=body, timeout=5)
            kind = r.headers.get("Content-Type", "").split(";")[0]
            code = r.json().get("error", {}).get("code") if kind == "application/json" else None
            log.append((at, "a2a", r.status_code, kind, code))
        except Exception as exc:
            log.append((at, "a2a", None, type(exc).__name__, None))
        try:
            stub.GetTask(pb.GetTaskRequest(id=task_id), metadata=md, timeout=5)
            log.append((at, "grpc", "OK", "", None))
        except grpc.RpcError as exc:
            log.append((at, "grpc", exc.code().name, exc.details()[:60], None))
        time.sleep(0.1)


def summary(log: list, door: str) -> str:
    """Runs of equal answers, e.g. '200 application/json x40; 503 application/json -32603 x12'."""
    runs: list[list] = []
    for entry in (e for e in log if e[1] == door):
        key = " ".join(str(x) for x in entry[2:] if x not in (None, ""))
        if runs and runs[-1][0] == key:
            runs[-1][1] += 1
            runs[-1][3] = entry[0]
        else:
            runs.append([key, 1, entry[0], entry[0]])
    return "; ".join(f"{k} x{n} ({a:.1f}-{b:.1f} s)" for k, n, a, b in runs)


def verdict(frames: list[tuple[float, str]], back: float, completed: float) -> str:
    """Resumed (the completion arrived after it was committed), ended with an error (an
    error frame or a close), or hung — each against BOUND."""
    for t, what in frames:
        # (a stream may see the commit before this process has read its clock after it)
        if t >= completed - 0.05 and any(w in what for w in DONE):
            late = t - completed
            return f"{'resumed' if late <= BOUND else 'HUNG (late)'}: {late:.2f} s after the commit"
        if "error" in what or "end (" in what or "UNAVAILABLE" in what:
            late = t - back
            word = "ended" if late <= BOUND else "HUNG (late)"
            return f"{word}: {what}, {late:+.2f} s after the server was back"
    return "HUNG: neither resumed nor ended within the bound"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", default="15/main", help="pg_ctlcluster VERSION/NAME")
    args = parser.parse_args()
    env = configure(scale_out=True)
    os.environ["TASKDECK_RATE_RESYNC"] = "0"
    env = dict(os.environ)
    import django

    django.setup()
    import grpc
    import httpx
    from django.core.management import call_command
    from django.db import connections

    from a2a import api_keys, services
    from a2a.grpc_door.protos import a2a_pb2 as pb
    from a2a.grpc_door.protos import a2a_pb2_grpc
    from a2a.models import Task

    call_command("migrate", verbosity=0)
    _, token = api_keys.create_key("bench", ["read", "write", "operator"])
    agent = services.Actor("agent", "bench-agent")
    msg = services.IncomingMessage(message_id="r-1", parts=[{"kind": "text", "text": "deploy"}])
    task = services.create_task(msg, actor=services.Actor("operator", "bench"), skill="approval")
    services.start_task(task.id, actor=agent)
    port = free_port()
    web = start_server(env, port)
    grpc_proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "run_grpc", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    address = grpc_proc.stdout.readline().rsplit(" ", 1)[1].strip()
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    doors = {n: Door(n) for n in ("jsonrpc", "rest", "grpc", "agui-run", "socket")}
    stop = threading.Event()
    log: list = []
    threads = []
    failed = False
    try:
        http = httpx.Client(base_url=base, headers=auth, timeout=60)
        channel = grpc.insecure_channel(address)
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        md = [("authorization", f"Bearer {token}")]
        resub = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tasks/resubscribe",
            "params": {"id": task.id},
        }
        run = {
            "threadId": str(uuid.uuid4()),
            "runId": str(uuid.uuid4()),
            "messages": [{"id": "u1", "role": "user", "content": "Roll out"}],
            "forwardedProps": {"skill": "approval"},
        }
        streams = [
            (doors["jsonrpc"], http.stream("POST", "/a2a/", json=resub), rpc_state),
            (doors["rest"], http.stream("POST", f"/a2a/rest/tasks/{task.id}:subscribe"),
             rest_state),
            (doors["agui-run"], http.stream("POST", "/agui/run", json=run,
                                            headers={"Accept": "text/event-stream"}), agui_state),
        ]  # fmt: skip
        for door, cm, reader in streams:
            response = cm.__enter__()
            threads.append(threading.Thread(target=sse, args=(door, response, reader), daemon=True))
        threads.append(
            threading.Thread(
                target=grpc_stream, args=(doors["grpc"], stub, pb, md, task.id), daemon=True
            )
        )
        threads.append(threading.Thread(
            target=socket, args=(doors["socket"], f"ws://127.0.0.1:{port}/ws/agui/", token, stop),
            daemon=True))  # fmt: skip
        for t in threads:
            t.start()
        time.sleep(2)  # every stream has sent its opening frames
        poll_http = httpx.Client(base_url=base, headers=auth)
        polling = threading.Thread(
            target=poller, args=(log, poll_http, stub, pb, md, task.id, stop), daemon=True
        )
        polling.start()
        time.sleep(1)
        connections.close_all()
        began = time.monotonic() - T0
        version, name = args.cluster.split("/")
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "restart"], check=True
        )
        back = time.monotonic() - T0
        print(f"PostgreSQL restart: {began:.2f} s → {back:.2f} s (load {os.getloadavg()[0]:.1f})")
        run_task = Task.objects.exclude(pk=task.id).get()  # the AG-UI run's own task
        services.complete_task(task.id, actor=agent, text="done")
        completed = time.monotonic() - T0  # the run's task is completed ~10 ms later
        services.start_task(run_task.id, actor=agent)
        services.complete_task(run_task.id, actor=agent, text="done")
        print(f"both tasks completed at {completed:.2f} s")
        deadline = time.monotonic() + BOUND + 2
        for t in threads[:4]:
            t.join(max(0, deadline - time.monotonic()))
        time.sleep(max(0, deadline - time.monotonic()))
        stop.set()
        polling.join(10)
        for door in doors.values():
            after = [(t, w) for t, w in door.frames if t >= began]
            print(f"\n{door.name}:")
            for t, what in after:
                print(f"  {t:7.2f} s  {what}")
            outcome = verdict(after, back, completed)
            failed = failed or outcome.startswith("HUNG")
            print(f"  → {outcome}")
        print(f"\n/a2a during it: {summary(log, 'a2a')}")
        print(f"gRPC GetTask during it: {summary(log, 'grpc')}")
        if any(e[1] == "a2a" and e[3] == "text/html" for e in log):
            failed = True
            print("HTML answered by /a2a")
    finally:
        stop.set()
        web.terminate()
        grpc_proc.terminate()
        web.wait(30)
        grpc_proc.wait(30)
        connections.close_all()
        drop_bench_db()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
