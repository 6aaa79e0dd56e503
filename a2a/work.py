"""Whether an agent has more to do on a task now: the seam between the doors, which wait
for it, and whoever runs agents.

A blocking send answers once its task *settles* (it waits for someone else, or nobody
works on it and no wakeup is left unserved); an ACP prompt's turn ends the same way. What
"works on it" means belongs to the agent runtime (its run leases, which the ACP host's
supervisors keep too, and the runs of inline agents in this very process). So the core
only declares the questions, and the runtime answers them: it registers a `Runner` from
its AppConfig.ready() (`provide`). Doors ask here and never import the runtime
(docs/architecture.md, rules 2 and 5).

Each question is one call through to the runner: no query or thread hop of its own, so
the blocking send's path costs what it cost when the bindings called the runtime.

Without a runner (the runtime not installed) nothing runs agents: every task is settled
at once, and no task is run in the caller's process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass


def _nothing_here(task_id: str) -> asyncio.Future | None:
    return None


@dataclass(frozen=True)
class Runner:
    """What the runner of agents answers (a2a.runtime.settle, a2a.runtime.inline).

    - `settled(task_id)`: in a database thread, whether the task has nothing more to do
      for now (two indexed reads at most);
    - `until_settled(task_id, timeout)`: in the event loop, wait until it is; True if it
      settled within `timeout` seconds (None: the configured TASKDECK BLOCKING_SEND_SECONDS);
    - `may_run_here()`: a context manager around a blocking or streaming send's handler,
      in its thread: a task the handler creates may be run in this process, so the send
      waits for that run instead of a hand-off to a worker;
    - `running_here(task_id)`: in the event loop, this process's run of the task while it
      runs (a future of the loop, done when the run ends), else None.
    """

    settled: Callable[[str], bool]
    until_settled: Callable[[str, float | None], Awaitable[bool]]
    may_run_here: Callable[[], AbstractContextManager[object]]
    running_here: Callable[[str], asyncio.Future | None] = _nothing_here
    # in a send's handler (inside `may_run_here`): whether a task of this skill created
    # now is run in this process at once; its creation then starts it too (one transaction
    # and one turn of SQLite's write lock less per blocking send: a2a.services.create_task)
    starts_at_once: Callable[[str], bool] = lambda skill: False
    # the step journal (issue 29, "retry from the failed step"): how many steps a task's
    # run recorded, and carrying a failed run's steps over to its retry, in the caller's
    # transaction (`a2a.services.rerun_task`)
    recorded_steps: Callable[[str], int] = lambda task_id: 0
    carry_steps: Callable[[str, str], int] = lambda from_id, to_id: 0


def _always(task_id: str) -> bool:
    return True


async def _at_once(task_id: str, timeout: float | None) -> bool:
    return True


NOBODY = Runner(settled=_always, until_settled=_at_once, may_run_here=nullcontext)
_runner: Runner = NOBODY


def provide(runner: Runner) -> Runner:
    """Register the runner of agents (from AppConfig.ready(), which may run twice: the
    same runner again is a no-op). A second, different runner is refused: two answers to
    "is it settled" would each be half of the truth."""
    global _runner
    if _runner not in (NOBODY, runner):
        raise RuntimeError(f"a runner of agents is already registered: {_runner!r}")
    _runner = runner
    return runner


def settled(task_id: str) -> bool:
    """In a database thread: the task has nothing more to do for now."""
    return _runner.settled(task_id)


def until_settled(task_id: str, timeout: float | None = None) -> Awaitable[bool]:
    """In the event loop: wait until the task settles, at most `timeout` seconds (None:
    TASKDECK BLOCKING_SEND_SECONDS). True if it did."""
    return _runner.until_settled(task_id, timeout)


def may_run_here() -> AbstractContextManager[object]:
    """Around a blocking or streaming send's handler (see `Runner.may_run_here`)."""
    return _runner.may_run_here()


def starts_at_once(skill: str) -> bool:
    """Inside a send's `may_run_here`: is a task of `skill` created now run here at once?
    (Its run's lease is taken in the creating transaction; see `Runner.starts_at_once`.)"""
    return _runner.starts_at_once(skill)


def running_here(task_id: str) -> asyncio.Future | None:
    """In the event loop: this process's run of the task while it runs on this loop,
    else None (a run on another loop of the process cannot be awaited here)."""
    run = _runner.running_here(task_id)
    if run is None or run.get_loop() is not asyncio.get_running_loop():
        return None
    return run


def recorded_steps(task_id: str) -> int:
    """How many steps the task's run recorded (0 without a runtime, or for an agent whose
    run records none: a hosted ACP agent's)."""
    return _runner.recorded_steps(task_id)


def carry_steps(from_id: str, to_id: str) -> int:
    """Copy the failed run `from_id`'s recorded steps to the new task `to_id`, so its run
    replays them and runs the rest; in the caller's transaction. Returns how many."""
    return _runner.carry_steps(from_id, to_id)


async def run_ended(run: asyncio.Future, timeout: float) -> bool:
    """Wait for `run` (from `running_here`) at most `timeout` seconds: True if it ended.
    The run is never cancelled by the waiter (a caller who hangs up leaves it running)."""
    done, _ = await asyncio.wait({run}, timeout=timeout)
    return bool(done)
