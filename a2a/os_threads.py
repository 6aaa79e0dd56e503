"""What the operating system knows of a Taskdeck thread: its name and its CPU priority.

Why: a web process runs the A2A calls' work on a few threads below its own CPU priority
(dashboard/call_threads.py; docs/production.md, "Calls below the live view"), while its
event loop and the live view's threads keep it. Linux keeps a priority per thread, and a
thread starts with its creator's, so which thread starts which matters; naming the
threads lets an operator (`top -H`, `ps -L -o tid,ni,comm -p PID`) and the tests see
which is which. Python 3.11 does not pass its thread names to the system.

Both are best effort: on a system without per-thread priorities or /proc they do nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading

# The kernel keeps 15 bytes of a thread's name (TASK_COMM_LEN less the NUL).
NAME_BYTES = 15


def name(label: str | None = None) -> None:
    """Give the calling thread `label` (its Python name by default) as its system name."""
    label = label or threading.current_thread().name
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    with contextlib.suppress(OSError), open(path, "wb") as comm:
        comm.write(label.encode()[:NAME_BYTES])


def priority() -> int:
    """The calling thread's nice value (0 unless lowered; higher runs later)."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def lower(by: int) -> None:
    """Run the calling thread `by` nice steps below where it runs now. One way only: an
    unprivileged thread cannot raise its priority again, and the threads it starts begin
    at the lowered one."""
    if by > 0:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), priority() + by)
