"""A web process's call threads: how many, and how far below the rest of the process's
CPU priority they run.

The A2A calls' database work (the JSON-RPC, HTTP+JSON and stream handlers, inline agents'
steps) runs on the event loop's default executor: TASKDECK_CALL_THREADS threads (by
default Daphne's ASGI_THREADS, else Python's min(32, cores + 4)), each TASKDECK_CALL_NICE
nice steps below the process (0 by default: at its priority).

Lowered, they let the kernel run the process's event loop, the log's reader and the
projector first whenever those are ready, and the calls with what is left. With sixteen
blocking sends in flight on two cores (bench/agui_fanout.py --load 16 --web 2), two call
threads five steps below took commit -> STATE_DELTA at p99 from 91-115 ms to 67-85 ms on
SQLite and from 212 to 82 ms on PostgreSQL; but the writes then completed a sixth to
almost half fewer calls (bench/load.py). So it is the operator's choice, not the default: a board
watched under a saturating load, against the most calls a core can serve. Figures:
docs/production.md, "Calls below the live view" and "The fan-out under a real load".

A thread starts at its creator's priority, and a lowered thread cannot raise its own
back: the threads the live view runs on are started here, from the process's main
thread, before any call could start them (the projector thread, the sender loop of a
cross-process channel layer).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from a2a import conf, notify, os_threads
from agui import projection

THREAD_NAME = "taskdeck-call"


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Give `loop` the call threads as its default executor, and start the live view's
    threads at the process's own priority. Called once, when a Daphne process imports
    the ASGI application (dashboard/asgi.py)."""
    projection.start()
    notify.start_sender()
    loop.set_default_executor(
        ThreadPoolExecutor(
            conf.TASKDECK.call_threads,
            thread_name_prefix=THREAD_NAME,
            initializer=_call_thread,
            initargs=(conf.TASKDECK.call_nice,),
        )
    )


def _call_thread(nice: int) -> None:
    os_threads.name()
    os_threads.lower(nice)
