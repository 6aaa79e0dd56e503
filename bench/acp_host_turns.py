"""Hosted ACP agents (a2a/acp_host): what a turn costs. A supervisor (`manage.py
run_acp_host`) hosts the RFC test agent (tests/runtime/peers/rfc_agent.py, the official
Python SDK); this process writes messages through the services and polls the database
(every 2 ms) for the agent's reply. Prints figures; asserts nothing.

    .venv/bin/python bench/acp_host_turns.py [--scale-out] [--turns 50] [--sessions 20]

- session start: task created -> first reply (the agent's process started, initialize,
  session/new, the prompt, its reply written);
- warm turn: a message to an open session -> its reply written;
- N sessions at once: N tasks created together -> the last reply, and the supervisor's
  CPU time per warm turn (its own process; the agents' are not counted);
- woken turn: a message to a session whose agent was stopped idle (a2a/acp_host/idle.py,
  the agent's idleSeconds 0.5) -> its reply (the process started again, initialize,
  session/resume, the prompt, its reply written).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _harness import ROOT, configure, drop_bench_db, percentiles

PEER = ROOT / "tests" / "runtime" / "peers" / "rfc_agent.py"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-out", action="store_true")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    env = configure(args.scale_out)
    var = Path(env["TASKDECK_VAR_DIR"])
    (var / "rfc").mkdir()
    state = {"RFC_AGENT_STATE_DIR": str(var / "rfc")}
    agents = {"RFC": {"command": sys.executable, "args": [str(PEER)], "env": state,
                      "skill": "rfc"},
              "Sleepy RFC": {"command": sys.executable, "args": [str(PEER)], "env": state,
                             "skill": "rfc-sleepy", "idleSeconds": 0.5}}  # fmt: skip
    (var / "agents.json").write_text(json.dumps({"agent_servers": agents}))
    env.update(TASKDECK_ACP_AGENTS=str(var / "agents.json"), TASKDECK_WAKE_DIR=str(var / "wake"))
    os.environ.update(env)

    import django

    django.setup()
    from django.core.management import call_command

    from a2a import services
    from a2a.event_kinds import EventKind
    from a2a.models import Message, TaskEvent

    call_command("migrate", verbosity=0)
    log = open(var / "supervisor.log", "w")  # noqa: SIM115
    host = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "run_acp_host"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    actor = services.Actor("client", "bench")

    def message(text: str) -> services.IncomingMessage:
        return services.IncomingMessage(
            message_id=str(uuid.uuid4()), parts=[{"kind": "text", "text": text}]
        )

    def replies(task_id: str) -> int:
        return Message.objects.filter(task_id=task_id, role="agent").count()

    def wait_replies(task_id: str, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while replies(task_id) < n:
            if time.monotonic() > deadline or host.poll() is not None:
                raise RuntimeError(f"no reply for {task_id} (see {var / 'supervisor.log'})")
            time.sleep(0.002)

    def new_session() -> tuple[str, float]:
        started = time.perf_counter()
        task = services.create_task(message("echo hi"), actor=actor, skill="rfc", metadata={})
        wait_replies(task.id, 1)
        return task.id, time.perf_counter() - started

    mode = "PostgreSQL + Redis" if args.scale_out else "SQLite + in-memory layer"
    print(f"Hosted ACP agent turns ({mode}; one supervisor, the RFC test agent)")
    try:
        new_session()  # warm-up: the supervisor's start-up and imports are not measured
        starts = [new_session()[1] for _ in range(10)]
        print(f"session start: create -> first reply  {percentiles(starts)}")
        task_id, _ = new_session()
        turns = []
        cpu_before = cpu_seconds(host.pid)
        for i in range(args.turns):
            started = time.perf_counter()
            services.add_message(task_id, message(f"echo {i}"), actor=actor)
            wait_replies(task_id, i + 2)
            turns.append(time.perf_counter() - started)
        cpu = (cpu_seconds(host.pid) - cpu_before) / args.turns
        print(f"warm turn: message -> reply  {percentiles(turns)}")
        print(f"supervisor CPU per warm turn: {cpu * 1000:.1f} ms")
        started = time.perf_counter()
        made = [
            services.create_task(message("echo hi"), actor=actor, skill="rfc", metadata={}).id
            for _ in range(args.sessions)
        ]
        for task_id in made:
            wait_replies(task_id, 1, timeout=120)
        took = time.perf_counter() - started
        print(f"{args.sessions} sessions started together: last reply after {took:.2f} s")

        def stops(task_id: str) -> int:
            return TaskEvent.objects.filter(
                task_id=task_id, kind=EventKind.HOST_NOTE, data__what="idle_stopped"
            ).count()

        sleepy = services.create_task(message("echo hi"), actor=actor, skill="rfc-sleepy").id
        woken = []
        for i in range(10):
            deadline = time.monotonic() + 30
            while stops(sleepy) < i + 1:  # its agent stopped idle
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the idle agent was not stopped ({var})")
                time.sleep(0.01)
            started = time.perf_counter()
            services.add_message(sleepy, message(f"echo {i}"), actor=actor)
            wait_replies(sleepy, i + 2)
            woken.append(time.perf_counter() - started)
        print(f"woken turn (agent stopped idle): message -> reply  {percentiles(woken)}")
    finally:
        host.send_signal(signal.SIGTERM)
        try:
            host.wait(timeout=30)
        except subprocess.TimeoutExpired:
            host.send_signal(signal.SIGABRT)  # with PYTHONFAULTHANDLER=1: its stacks, in the log
            host.wait()
            print(f"the supervisor did not stop within 30 s of SIGTERM ({var / 'supervisor.log'})")
        if args.scale_out:
            drop_bench_db()


if __name__ == "__main__":
    main()
