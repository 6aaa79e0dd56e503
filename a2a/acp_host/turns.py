"""A hosted agent's turns, one at a time: started on a wakeup, watched until they end.

A turn is the agent's work for one user message (`session/prompt`, its message marked
consumed BEFORE it is sent: never sent twice), for one resume it must hear of
(`session/resume`, a2a.acp_host.pauses), or for the answer to a question asked again after
a takeover (a2a.acp_host.permission_requests). It runs as a task of its own while the session's
loop (a2a.acp_host.session) goes on reading the task; the loop watches it every poll:
what the agent said is written at least every TEXT_FLUSH_SECONDS, and a turn silent for
TURN_SECONDS (not waiting for a person) is cancelled, then its process stopped
STOP_GRACE_SECONDS later. Its end is noted when it says something (cancelled with a
reason, refused, an error) and lets the run lease go.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from acp import RequestError

from a2a import conf, services
from a2a.acp_host import store
from a2a.acp_host.agent_process import AgentGone
from a2a.errors import TaskError
from a2a.formats import text_of
from a2a.lifecycle import State, TransitionRefused
from a2a.runtime import faults, leases
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun

TEXT_FLUSH_SECONDS = 1.0  # during a turn, gathered text is written at least this often
STOP_GRACE_SECONDS = 5.0  # after session/cancel of a stalled turn, before the process is killed


class Turns:
    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.job: asyncio.Task | None = None  # the turn in flight
        self.served = 0  # the lease's wakeup count the last turn serves (released at its end)
        self.last_heard = 0.0  # loop time of the agent's last message
        self.cancel_sent_at: float | None = None  # a stalled turn's session/cancel

    @property
    def running(self) -> bool:
        return self.job is not None

    def heard(self, _message: dict[str, Any]) -> None:
        """Every message from the agent: it is alive."""
        self.last_heard = asyncio.get_running_loop().time()

    async def next(self) -> None:
        """Work not done yet (a wakeup not served, a message not handed over): claim the
        run lease, then read what to do and start the turn that does it.

        The task is read again AFTER the claim: a message and its wakeup commit together,
        so every wakeup the claim counts has its message in this read. (Decided from the
        loop's read before the claim, a message that landed between the two was counted
        as served by a claim that found nothing to prompt, and was never sent.) A turn
        that leaves messages waiting serves no wakeup: the lease is not settled (a
        blocking send of a later message waits for its own turn) and its release asks for
        the next turn."""
        run = self.run
        claimed = await in_db(leases.claim)(run.task_id, run.me)
        if claimed is None:
            return  # not runnable after all, or a turn lease still held (a dead holder's)
        snap = await in_db(store.snapshot)(run.task_id, run.row.consumed)
        if snap is None or snap.state not in leases.RUNNABLE:
            await run.release(claimed)  # it moved meanwhile (cancelled, paused): look again
            return
        try:
            if snap.state == State.SUBMITTED:
                await in_db(services.start_task)(run.task_id, actor=run.actor)
            elif snap.last_resumed is not None:  # ends "resumed, waiting for a worker"
                await in_db(services.note_pickup)(run.task_id, actor=run.actor)
        except (TaskError, TransitionRefused):
            await run.release(claimed)  # it moved meanwhile (cancelled, paused): look again
            return
        last = snap.last_resumed
        msg = snap.next_message
        resume = (
            last is not None
            and last.id != run.row.resumed_to_agent
            and run.pauses.resumes_to_agent(last)
        )
        # an agent stopped idle (a2a.acp_host.idle) is not started for nothing: a resume
        # with nothing to pass on and no message leaves it stopped
        if resume or msg is not None or run.row.idle_stopped_at is None:
            try:
                await run.ensure_session()
            except Exception as exc:
                if faults.is_infrastructure(exc):
                    await in_db(leases.release)(run.task_id, None, run.me)
                    raise
                await run.cannot_start(exc, claimed)
                return
        if resume:
            assert last is not None
            run.row.resumed_to_agent = last.id
            await in_db(store.save)(run.row, "resumed_to_agent")
            served = snap.served if msg is not None else claimed
            await self.start(run.pauses.pass_resume(last), served, None)
        elif run.permissions.answer is not None:  # a question asked again, answered
            text, meta = run.permissions.answer
            run.permissions.answer = None
            served = snap.served if msg is not None else claimed
            await self.start(run.agent_process.prompt(run.row.session_id, text, meta), served, None)
        elif msg is not None:
            served = snap.served if snap.more_messages else claimed
            await self.start(self.prompt(msg), served, msg.seq)
        elif not await run.release(claimed):  # woken with nothing to send (a resume
            await self.idle()  # whose held turn ended meanwhile): it waits for a message

    async def prompt(self, msg: Any) -> str:
        run = self.run
        return await run.agent_process.prompt(run.row.session_id, text_of(msg.parts) or "")

    async def start(self, work: Any, served: int, consumed: int | None) -> None:
        run = self.run
        if not await in_db(store.start_turn)(run.row, consumed, run.me):
            work.close()  # never sent: another supervisor holds the session now
            await in_db(leases.release)(run.task_id, None, run.me)
            run.finished = True
            return
        self.served = served
        self.last_heard = asyncio.get_running_loop().time()
        self.cancel_sent_at = None
        run.recorder.new_turn()
        self.job = asyncio.ensure_future(work)
        self.job.add_done_callback(lambda _t: run.nudge.set())

    async def watch(self) -> None:
        """The loop's look at the turn in flight: still working, or ended."""
        run = self.run
        assert self.job is not None
        if not self.job.done():
            await run.recorder.flush_if_older(TEXT_FLUSH_SECONDS)
            await self.check_stalled()
            return
        job, self.job = self.job, None
        try:
            stop = job.result()
        except AgentGone:
            await run.exited()
            return
        except RequestError as exc:
            stop = None
            await run.note("refused", f"the agent answered the turn with error {exc.code}: {exc}")
        except Exception as exc:  # an answer that is not ACP (an unknown stopReason...)
            stop = None
            await run.note("refused", f"the agent's answer to the turn was not ACP: {exc}"[:2000])
        await run.recorder.drain()
        await run.recorder.flush_text()
        if stop == "cancelled" and run.recorder.cancel_note:
            await run.note("cancelled_turn", run.recorder.cancel_note)
        elif stop in ("max_tokens", "max_turn_requests", "refusal"):
            await run.note("refused", f"the agent ended its turn: {stop}")
        await in_db(store.end_turn)(run.row)
        if not await run.release(self.served):
            await self.idle()

    async def idle(self) -> None:
        """Nothing waits for a turn: the session is idle until the next message, and the
        log says so (`turn_ended`: the board and the task page show "Idle" rather than
        "Working" for ever). Noted after the release, so a message that came meanwhile
        makes the next turn instead; a message that comes after this note is an event
        after it, which ends the idle."""
        run = self.run
        with contextlib.suppress(TaskError, TransitionRefused):
            await in_db(services.note_turn_ended)(
                run.task_id, actor=run.actor, consumed=run.row.consumed or 0
            )

    async def check_stalled(self) -> None:
        run = self.run
        loop = asyncio.get_running_loop()
        if run.permissions.busy:
            self.last_heard = loop.time()  # waiting for a person is not the agent stalling
            return
        limit = run.agent.turn_seconds or conf.ACP_HOST.turn_seconds
        if self.cancel_sent_at is None and loop.time() - self.last_heard > limit:
            await run.note("stalled", f"nothing from the agent for {limit:g} s: cancelling")
            await self.cancel("")
            self.cancel_sent_at = loop.time()
        elif (
            self.cancel_sent_at is not None
            and loop.time() - self.cancel_sent_at > STOP_GRACE_SECONDS
        ):
            await run.note("stalled", "the agent did not end its cancelled turn: stopping it")
            await run.stop_process(kill=True)

    async def cancel(self, why: str) -> None:
        """session/cancel; `why`, if any, is noted when the turn ends cancelled."""
        run = self.run
        run.recorder.cancel_note = why
        run.permissions.void()  # permission requests it held while paused are void now
        await run.agent_process.cancel(run.row.session_id)
        run.permissions.withdraw()

    async def stop(self) -> None:
        """The task ended: a turn in flight is cancelled, given STOP_GRACE_SECONDS to end,
        then dropped."""
        if self.job is not None and not self.job.done():
            await self.cancel("")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.job), STOP_GRACE_SECONDS)
        if self.job is not None:
            self.job.cancel()
            self.job = None
            await in_db(store.end_turn)(self.run.row)

    def abandon(self) -> None:
        """The agent's process is gone: the turn in flight, if any, with it."""
        if self.job is not None and not self.job.done():
            self.job.cancel()
        self.job = None
