"""The supervisor process (`manage.py run_acp_host`): holds the sessions of hosted ACP
agents, one HostedRun (and one agent process) per open task.

Several may run, on one machine or many: each session is held by exactly one, taken with
a conditional update and kept by renewing it every third of LEASE_SECONDS. One that is
killed stops renewing; after the lease another takes its sessions over (the agent is
started again and the session taken up with `session/resume` or `session/load`; a turn
that was cut off is noted, and its prompt is not sent again).

It wakes on its own bell (a2a.acp_host.bell: NOTIFY on PostgreSQL, local sockets on
SQLite), which a2a.acp_host.hooks rings with the task's id on every change of a hosted
task: only that session re-reads its task. It looks for free sessions every POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from a2a import conf
from a2a.acp_host import config, store
from a2a.acp_host.bell import SessionBell
from a2a.acp_host.session import HostedRun
from a2a.runtime.faults import describe, is_infrastructure
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.runtime.leases import WORKER_ID

log = logging.getLogger(__name__)
STOP_SECONDS = 10.0  # a stopping supervisor waits this long for its sessions to close


class Supervisor:
    def __init__(self, me: str = WORKER_ID) -> None:
        self.me = me
        self.runs: dict[str, tuple[HostedRun, asyncio.Task]] = {}
        self.stopping = asyncio.Event()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        ringer = SessionBell()
        ringer.start()
        poll = conf.ACP_HOST.poll_seconds
        renewing = asyncio.ensure_future(self.keep_renewing(store.lease_seconds() / 3))
        rung = True
        log.info("ACP host %s: agents %s", self.me, ", ".join(config.agents()) or "none")
        try:
            while not self.stopping.is_set():
                try:
                    await self.tick(ringer.take() if rung else set())
                except Exception as exc:  # one bad row must not stop every session
                    if is_infrastructure(exc):
                        log.warning("ACP host: database unavailable (%s)", describe(exc))
                    else:
                        log.exception("ACP host: a tick failed")
                waiter = asyncio.ensure_future(asyncio.to_thread(ringer.wait, poll))
                stop = asyncio.ensure_future(self.stopping.wait())
                await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
                stop.cancel()
                rung = waiter.done() and bool(waiter.result())
        finally:
            renewing.cancel()
            await self.stop_all()

    async def tick(self, rung: set[str]) -> None:
        """Take free sessions (one query when there are none); tell the held sessions
        whose tasks were rung to re-read them ("*": all). Without a ring, a session in a
        turn watches its task on its own poll and an idle one re-reads it now and then."""
        for task_id in [t for t, (_, job) in self.runs.items() if job.done()]:
            del self.runs[task_id]
        room = conf.ACP_HOST.max_sessions - len(self.runs)
        taken = (
            await in_db(store.claim_sessions)(self.me, list(self.runs), room) if (room > 0) else []
        )
        for task_id, agent_id in taken:
            agent = config.get(agent_id)
            if agent is None:
                continue
            run = HostedRun(task_id, agent, self.me)
            self.runs[task_id] = (run, asyncio.ensure_future(run.main()))
            log.info("ACP host %s: holding the session of task %s (%s)", self.me, task_id, agent_id)
        for task_id, (run, _) in self.runs.items():
            if task_id in rung or "*" in rung:
                run.nudge.set()

    async def keep_renewing(self, every: float) -> None:
        """Renew the holds on its own beat: a tick that keeps failing (or a session that
        keeps the database thread busy) must not let the holds lapse while alive."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.renew()
            except Exception as exc:
                log.warning("ACP host %s: could not renew its sessions (%s)", self.me, exc)

    async def renew(self) -> None:
        lost = await in_db(store.renew)(self.me, list(self.runs))
        for task_id in lost:
            run, _ = self.runs.get(task_id, (None, None))
            if run is not None and run.letting_go:
                continue  # its own session let it go (its task ended): the tick drops it
            log.warning("ACP host %s: the session of task %s was taken over", self.me, task_id)
            _, job = self.runs.pop(task_id, (None, None))
            if job is not None:
                job.cancel()

    async def stop_all(self) -> None:
        """Stop every session (their agents' stdin closed, then terminated, then killed:
        the SDK's way) within STOP_SECONDS; an agent still running after is killed. A turn
        cut off here is noted by the session's next holder (its prompt is not resent)."""
        runs = [run for run, _ in self.runs.values()]
        jobs = [job for _, job in self.runs.values()]
        for job in jobs:
            job.cancel()
        if jobs:
            _, late = await asyncio.wait(jobs, timeout=STOP_SECONDS)
            for run in runs:
                run.agent_process.kill()
            if late:
                log.warning("ACP host %s: %d sessions did not stop in time", self.me, len(late))
        self.runs.clear()
