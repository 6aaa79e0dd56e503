"""How long a pause takes to stop a running task, per mode, and how close to their deadline
timeouts fire. Prints figures; asserts nothing.

    .venv/bin/python bench/pause_latency.py [--trials 10] [--timeouts 5]

Uses a throwaway SQLite database (or DATABASE_URL), one real worker (db_worker) and the
scheduler, with the demo agents at their real pace (a batch item takes 0.5 s).
- pause → stop: from the pause's commit (Suspension.suspended_at) to the end of the job
  running the task (django-tasks-db's finished_at), i.e. when the worker let go.
- timeout accuracy: from a 1-minute deadline to the moment the scheduler resumed the task
  (Suspension.ended_at). This part waits about 70 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VAR = tempfile.mkdtemp(prefix="taskdeck-bench-")
os.environ.update(
    DJANGO_SETTINGS_MODULE="dashboard.settings",
    DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "bench-only"),
    TASKDECK_VAR_DIR=VAR,
    TASKDECK_AGENT_DELAY_SCALE="1",
)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402

from a2a import services  # noqa: E402
from a2a.models import Suspension, Task  # noqa: E402
from a2a.runtime.models import StepRecord  # noqa: E402

ACTOR = services.Actor("operator", "bench")


def wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError("bench gave up waiting")
        time.sleep(0.01)
    return value


def new_task(skill: str, **metadata) -> str:
    msg = services.IncomingMessage(
        message_id=f"bench-{time.monotonic_ns()}", parts=[{"kind": "text", "text": "bench"}]
    )
    return services.create_task(msg, actor=ACTOR, skill=skill, metadata=metadata).id


def items_done(task_id: str) -> int:
    return StepRecord.objects.filter(task_id=task_id, name__startswith="item ").count()


def stop_latency(mode: str, items: int) -> float:
    task_id = new_task("batch", items=items)
    wait_for(lambda: items_done(task_id) >= 2)
    time.sleep(0.1 + 0.4 * (time.monotonic() % 1))  # land at a random point inside a step
    handle = services.pause_task(task_id, actor=ACTOR, mode=mode).suspension.handle
    paused_at = Suspension.objects.get(handle=handle).suspended_at
    job = wait_for(
        lambda: (
            DBTaskResult.objects.filter(args_kwargs__args__0=task_id, finished_at__isnull=False)
            .order_by("-finished_at")
            .first()
        )
    )
    latency = (job.finished_at - paused_at).total_seconds()
    services.cancel_task(task_id, actor=ACTOR)
    return latency


def timeout_errors(n: int) -> list[float]:
    tasks = []
    for _ in range(n):
        tasks.append(new_task("scheduled", minutes=1))
        time.sleep(1.3)  # spread the deadlines over the scheduler's cycle
    errors = []
    for task_id in tasks:
        wait_for(lambda t=task_id: Task.objects.get(pk=t).state == "completed", timeout=150)
        s = Suspension.objects.get(task_id=task_id)
        errors.append((s.ended_at - s.deadline).total_seconds())
    return errors


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    ms = [v * 1000 for v in (ordered[0], statistics.median(values), p95, ordered[-1])]
    return "n={} min={:.0f} ms  median={:.0f} ms  p95={:.0f} ms  max={:.0f} ms".format(
        len(values), *ms
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--timeouts", type=int, default=5, help="0 to skip (saves ~70 s)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    env = dict(os.environ)
    manage = str(ROOT / "manage.py")
    procs = [
        subprocess.Popen([sys.executable, manage, "run_worker", "--interval", "0.05",
                          "--no-startup-delay", "--no-reload", "-v0"], env=env),
        subprocess.Popen([sys.executable, manage, "run_scheduler"], env=env,
                         stdout=subprocess.DEVNULL),
    ]  # fmt: skip
    try:
        db = django.db.connection.vendor
        print(f"Taskdeck pause benchmark ({db}, 1 worker, poll 0.1 s, batch item 0.5 s)")
        for mode, items in (
            ("interrupt_immediate", 40),
            ("finish_step", 40),
            ("wait_for_completion", 6),
        ):
            values = [stop_latency(mode, items) for _ in range(args.trials)]
            print(f"pause → worker stopped, {mode:<20} {summary(values)}")
        if args.timeouts:
            errors = timeout_errors(args.timeouts)
            print(f"timeout fired after its deadline (1-minute timeouts)  {summary(errors)}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


if __name__ == "__main__":
    main()
