"""How long a task stands still after its worker is SIGKILLed, until another worker
carries it on. Prints figures; asserts nothing.

    .venv/bin/python bench/takeover.py [--trials 8] [--scale-out]
    .venv/bin/python bench/takeover.py --acp [--trials 8] [--scale-out]

Two workers and the scheduler with the production timings (lease 15 s, beat every 1 s,
dead after 4 s, scheduler tick 0.25 s, worker poll 1 s plus the doorbell, as `manage.py
serve` starts them); a batch task whose items take 0.1 s. Each trial kills the worker
running the task and starts a replacement, so an idle worker is always there to take over.

- `run_worker` (beats): the scheduler notices the silent worker and frees its lease.
- `db_worker` (no beats, what Taskdeck ran before): only the lease's expiry frees it.

Measured: from the SIGKILL to the first item another worker records (so it includes the
job pickup, the replay of recorded steps and the rerun of the item in flight), and to
the moment the dead worker's job row stops being RUNNING (`db_worker` never does that).

`--acp`: the same for hosted ACP agents' sessions (a2a/acp_host): two supervisors
(`run_acp_host`) with the production timings (hold 15 s, renewed every 5 s, poll 0.25 s)
host the RFC test agent (tests/runtime/peers/rfc_agent.py). Each trial SIGKILLs the
supervisor holding a session and starts a replacement. Measured from the SIGKILL:
- held by another: the session's hold is another supervisor's;
- taken up, mid-turn: the `takeover` note (that supervisor started the agent and took
  the session up with session/resume);
- taken up, a permission open: the question asked again (a new input request).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument("--trials", type=int, default=8)
ARGS.add_argument("--scale-out", action="store_true", help="PostgreSQL + Redis")
ARGS.add_argument("--acp", action="store_true", help="hosted ACP agents' supervisors")
OPTS = ARGS.parse_args()
ENV = _harness.configure(OPTS.scale_out)
ENV["TASKDECK_AGENT_DELAY_SCALE"] = "0.2"  # a batch item: 0.5 s times 0.2
if OPTS.acp:
    _VAR = Path(ENV["TASKDECK_VAR_DIR"])
    (_VAR / "rfc").mkdir()
    _PEER = _harness.ROOT / "tests" / "runtime" / "peers" / "rfc_agent.py"
    _AGENTS = {"RFC": {"command": sys.executable, "args": [str(_PEER)], "skill": "rfc",
                       "env": {"RFC_AGENT_STATE_DIR": str(_VAR / "rfc")}}}  # fmt: skip
    (_VAR / "agents.json").write_text(json.dumps({"agent_servers": _AGENTS}))
    ENV.update(TASKDECK_ACP_AGENTS=str(_VAR / "agents.json"), TASKDECK_WAKE_DIR=str(_VAR / "wake"))
    os.environ.update(ENV)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402

from a2a import services  # noqa: E402
from a2a.runtime.models import RunLease, StepRecord  # noqa: E402

ACTOR = services.Actor("operator", "bench")
MANAGE = str(_harness.ROOT / "manage.py")


def spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, **ENV}
    return subprocess.Popen(
        [sys.executable, MANAGE, *args], env=env, stdout=subprocess.DEVNULL,
        stderr=open(Path(ENV["TASKDECK_VAR_DIR"]) / f"{args[0]}.log", "a"),
    )  # fmt: skip


def worker(command: str) -> subprocess.Popen:
    return spawn(command, "--interval", "1", "--no-startup-delay", "--no-reload", "-v0")


def trial(workers: dict[int, subprocess.Popen], command: str) -> tuple[float, float | None]:
    msg = services.IncomingMessage(
        message_id=f"bench-{time.monotonic_ns()}", parts=[{"kind": "text", "text": "bench"}]
    )
    task_id = services.create_task(msg, actor=ACTOR, skill="batch", metadata={"items": 2000}).id
    _harness.wait_for(lambda: StepRecord.objects.filter(task_id=task_id).count() >= 3)
    owner = RunLease.objects.get(task_id=task_id).owner
    pid = int(owner.rsplit(":", 1)[1])
    killed_at = timezone.now()
    workers[pid].send_signal(signal.SIGKILL)
    workers.pop(pid).wait()
    fresh = worker(command)
    workers[fresh.pid] = fresh
    step = _harness.wait_for(
        lambda: (
            StepRecord.objects.filter(task_id=task_id, completed_at__gt=killed_at)
            .exclude(worker=owner)
            .order_by("completed_at")
            .first()
        )
    )
    moved = (step.completed_at - killed_at).total_seconds()
    marked = None
    try:
        row = _harness.wait_for(
            lambda: next(
                (
                    r
                    for r in DBTaskResult.objects.filter(finished_at__gt=killed_at)
                    if owner in r.worker_ids and r.args_kwargs["args"] == [task_id]
                ),
                None,
            ),
            timeout=30,
        )
        marked = (row.finished_at - killed_at).total_seconds()
    except TimeoutError:
        pass
    services.cancel_task(task_id, actor=ACTOR)
    return moved, marked


def run(command: str, trials: int) -> None:
    workers = {p.pid: p for p in (worker(command), worker(command))}
    scheduler = spawn("run_scheduler")
    try:
        time.sleep(5)  # the scheduler trusts beats after DEAD_SECONDS of health
        moved, marked = [], []
        for _ in range(trials):
            m, k = trial(workers, command)
            moved.append(m)
            if k is not None:
                marked.append(k)
        row = _harness.percentiles(marked) if marked else "never (stays RUNNING)"
        print(f"{command:<11} kill → another worker records an item  {_harness.percentiles(moved)}")
        print(f"{'':<11} kill → its job row no longer RUNNING    {row}")
    finally:
        for proc in [*workers.values(), scheduler]:
            proc.terminate()
        for proc in [*workers.values(), scheduler]:
            proc.wait(timeout=30)


def supervisor() -> subprocess.Popen:
    return spawn("run_acp_host")


def acp_trial(
    sups: dict[int, subprocess.Popen], prompt: str, delay: float
) -> tuple[float | None, float | None]:
    """SIGKILL the supervisor holding a session (mid-turn, or with a permission open)
    `delay` seconds after the turn began to show (trials spread their kills over the
    renewal cycle); seconds until another supervisor holds it, and until it took the
    session up (`takeover` note: the agent started and resumed) or asked the question
    again."""
    from a2a.acp_host.models import HostedSession
    from a2a.event_kinds import EventKind
    from a2a.lifecycle import State
    from a2a.models import Task, TaskEvent

    msg = services.IncomingMessage(
        message_id=f"bench-{time.monotonic_ns()}", parts=[{"kind": "text", "text": prompt}]
    )
    task_id = services.create_task(msg, actor=ACTOR, skill="rfc", metadata={}).id
    asking = prompt == "ask"
    if asking:
        _harness.wait_for(
            lambda: Task.objects.filter(pk=task_id, state=State.INPUT_REQUIRED).exists(), 60
        )
    else:
        said = TaskEvent.objects.filter(task_id=task_id, kind=EventKind.MESSAGE_ADDED)
        _harness.wait_for(said.exists, 60)
    time.sleep(delay)
    holder = HostedSession.objects.get(task_id=task_id).holder
    killed = timezone.now()
    sups[int(holder.rsplit(":", 1)[1])].send_signal(signal.SIGKILL)
    sups.pop(int(holder.rsplit(":", 1)[1])).wait()
    fresh = supervisor()
    sups[fresh.pid] = fresh
    later = TaskEvent.objects.filter(task_id=task_id, created_at__gt=killed)
    done = (
        later.filter(kind=EventKind.INPUT_REQUESTED)
        if asking
        else later.filter(kind=EventKind.HOST_NOTE, data__what="takeover")
    )
    moved = HostedSession.objects.filter(task_id=task_id).exclude(holder__in=["", holder])
    held = took = None
    try:
        _harness.wait_for(moved.exists, timeout=60)
        held = (timezone.now() - killed).total_seconds()
        event = _harness.wait_for(lambda: done.first(), timeout=60)
        took = (event.created_at - killed).total_seconds()
    except TimeoutError:
        pass
    services.cancel_task(task_id, actor=ACTOR)
    return held, took


def run_acp(trials: int) -> None:
    sups = {p.pid: p for p in (supervisor(), supervisor())}
    try:
        time.sleep(8)  # both started (Django's set-up), not measured
        for what, prompt in (("mid-turn", "slow 100000"), ("permission open", "ask")):
            results = [acp_trial(sups, prompt, (i % 8) * 0.625) for i in range(trials)]
            for i, step in enumerate(("held by another", "taken up")):
                seen = [r[i] for r in results if r[i] is not None]
                figure = _harness.percentiles(seen) if seen else ""
                lost = len(results) - len(seen)
                never = f"  (never within 60 s: {lost})" if lost else ""
                print(f"ACP host, {what:<16} kill → {step:<16} {figure}{never}")
    finally:
        for proc in sups.values():
            proc.terminate()
        for proc in sups.values():
            proc.wait(timeout=30)


def main() -> None:
    call_command("migrate", verbosity=0)
    db = django.db.connection.vendor
    if OPTS.acp:
        print(f"Taskdeck ACP host takeover ({db}, 2 supervisors, hold 15 s, renewed every 5 s)")
        run_acp(OPTS.trials)
        if OPTS.scale_out:
            _harness.drop_bench_db()
        return
    print(f"Taskdeck worker takeover ({db}, 2 workers, lease 15 s, beat 1 s, dead after 4 s)")
    run("run_worker", OPTS.trials)
    run("db_worker", max(2, OPTS.trials // 2))
    if OPTS.scale_out:
        _harness.drop_bench_db()


if __name__ == "__main__":
    main()
