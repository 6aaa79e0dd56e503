"""Work done now and then, whoever asks for it: the registry the scheduler runs.

Apps register their periodic jobs here from their AppConfig.ready() (push: kick webhook
deliveries whose job was lost with a dead worker; the AG-UI projection: take long-finished
tasks out of the live view), and the runtime's scheduler (`manage.py run_scheduler`) runs
every registered job on each tick. So no app reaches into another's module lists, and the
scheduler never imports the apps whose work it runs (docs/architecture.md, rule 5).

A job takes no argument and returns how much it did (for the log); it decides itself
whether enough time passed since it last did something. A failure is logged by the
scheduler and never stops the tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Job = Callable[[], int]
_JOBS: list[Job] = []


def register(job: Job) -> Job:
    """Add a periodic job; registering the same one twice is a no-op (ready() may rerun)."""
    if job not in _JOBS:
        _JOBS.append(job)
    return job


def unregister(job: Job) -> None:
    if job in _JOBS:
        _JOBS.remove(job)


def jobs() -> tuple[Job, ...]:
    """The registered jobs, in the order they were registered."""
    return tuple(_JOBS)


class Paced:
    """How a periodic job paces itself: due at most once every `every` seconds in this
    process, and due again at once while its last run said more is waiting (a full batch:
    a backlog after an upgrade drains tick by tick, in bounded steps)."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.last = float("-inf")  # the first call is due

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def ran(self, *, more: bool) -> None:
        self.last = float("-inf") if more else time.monotonic()

    def batch(self, job: Callable[[int], int], size: int) -> int:
        """Run `job(size)` (it returns how many rows it took) when due; a full batch says
        more are waiting, so it is due again at the next tick. 0 when not due."""
        if not self.due():
            return 0
        done = job(size)
        self.ran(more=done >= size)
        return done
