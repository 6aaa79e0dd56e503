"""A web process's call threads: on SQLite, few of them and below the rest of the
process's CPU priority.

The A2A calls' database work (the JSON-RPC, HTTP+JSON and stream handlers, inline agents'
steps) runs on the event loop's default executor. Daphne leaves it at Python's default,
min(32, cores + 4) threads, all at the process's priority. On SQLite, under a load that
keeps every core busy (sixteen blocking sends in flight on two cores), that is six
threads per process taking turns at one GIL with the event loop and the projector
thread, and queueing at the one write lock: a change waited behind the calls at every
hop between its commit and the sockets (commit -> STATE_DELTA p99 69-77 ms,
bench/agui_fanout.py --load 16 --web 2).

Here the executor has TASKDECK_CALL_THREADS threads, each TASKDECK_CALL_NICE nice steps
below the process: on SQLite 2 and 5, and the kernel runs the event loop, the log's
reader and the projector first when they are ready, the calls with what is left (p99
38-55 ms, the calls' throughput within the runs' spread). On PostgreSQL the defaults
are Python's thread count at the process's priority: lowered call threads cost a quarter
to almost half of the writes' throughput there (bench/load.py). Why is not known; the
calls there wait on the network and on fsync more than on a core. Figures:
docs/production.md, "Calls below the live view".

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
