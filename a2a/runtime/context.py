"""The agent API: what an agent's `run(ctx)` can do.

Modelled on durable execution engines (Temporal, DBOS): a run is replayed from the top on
every slice; `await ctx.step(name, fn)` returns the recorded result of a completed step
instead of running it again, so pausing, resuming or crashing never repeats finished work.
Agent code between steps must therefore be deterministic (no clocks, no randomness: put
those in a step).

Every interaction with the task (input requests, parking, output) is itself a step, so a
replay does not ask twice or write the same artifact twice.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from a2a import conf, selectors, services
from a2a.conditions import parse_conditions
from a2a.lifecycle import TERMINAL, State, TransitionRefused
from a2a.models import Suspension, Task
from a2a.runtime import faults
from a2a.runtime.faults import InfrastructureFault
from a2a.runtime.leases import WORKER_ID
from a2a.runtime.models import RunLease, StepRecord


class Stop(Exception):
    """The slice ends here: the task is paused, waiting for input or an event, or over.
    Raised by the context; agents should let it propagate."""

    def __init__(self, why: str) -> None:
        self.why = why
        super().__init__(why)


class Reply(str):
    """Returned by an agent that answers with a message instead of a task's result
    (`return Reply("…")`): message/send then gets a Message back (A2A's message response)."""


IDLE = object()
"""Returned by an agent that has nothing to do until the next message: the task stays
`working` instead of completing (a long-lived conversation)."""


class NonDeterministicReplay(Exception):
    """The agent asked for a different step than the one recorded at this position."""


@dataclass(frozen=True)
class ResumeInfo:
    """How a pause ended, as the agent sees it."""

    handle: str
    cause: str
    input: Any
    continue_transcript: bool
    previous_state: str
    resumed_at: str | None

    @classmethod
    def of(cls, s: Suspension, previous_state: str) -> ResumeInfo:
        return cls(
            handle=s.handle,
            cause=s.cause,
            input=s.resume_input,
            continue_transcript=s.continue_transcript is not False,
            previous_state=previous_state,
            resumed_at=s.ended_at.isoformat() if s.ended_at else None,
        )


def _state_allows(task: Task, *, interaction: bool) -> bool:
    """May the run go on? Interactions (input requests, parking, completion) need a working
    task; plain steps also run while a wait_for_completion pause lets the turn finish."""
    if task.state == State.WORKING:
        return True
    return not interaction and services.accepts_output(task)


def _refusal_stops(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (an interaction the run opens after `_boundary` found the task working), with
    a refusal turned into a Stop: that read held no lock, so a cancel or pause may have
    committed since, and the service refused under the task's lock. The slice just ends —
    whatever stopped the task has its own consequences; this is not an agent error."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TransitionRefused as refused:
            raise Stop(f"task is {refused.state.value}") from None

    return call


class AgentContext:
    """One slice's view of a task run. Created by the executor."""

    def __init__(
        self,
        task: Task,
        *,
        steps: dict[int, StepRecord],
        transcript: list[dict[str, Any]],
        resume: ResumeInfo | None,
    ) -> None:
        self.task_id = task.id
        self.context_id = task.context_id
        self.skill = task.skill
        self.metadata = dict(task.metadata)
        self.resume = resume
        self._full_transcript = transcript
        self._steps = steps
        self._seq = 0
        self.actor = services.Actor("agent", task.skill or "agent")
        self.replayed = 0  # steps answered from the record in this slice (for tests, stats)
        # The first infrastructure fault a runtime call met in this slice: the executor
        # retries the run then, even if the agent caught the exception and went on.
        self.fault: InfrastructureFault | None = None

    def _db(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A runtime database call from the agent's coroutine, in the thread that holds the
        run's connection; a lost connection raises InfrastructureFault (see faults.py)."""
        call = faults.in_db_thread(fn)

        async def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return await call(*args, **kwargs)
            except InfrastructureFault as fault:
                self.fault = self.fault or fault
                raise

        return guarded

    async def _record(self, seq: int, name: str, result: Any, effect: Callable | None) -> Any:
        """Commit a step, riding out a short database outage: the step's work is done (or,
        with `effect`, undone by the rollback), so the commit is retried — after checking
        whether the lost commit landed after all — instead of running the step again.
        Only a longer outage ends the slice (the run is retried, the step reruns)."""
        commit, recorded = faults.in_db_thread(self._commit), faults.in_db_thread(_recorded)
        fault: InfrastructureFault | None = None
        for delay in COMMIT_RETRY_DELAYS:
            await asyncio.sleep(delay)
            try:
                if fault is not None and (record := await recorded(self.task_id, seq)):
                    self._steps[seq] = record
                    return record.result
                return await commit(seq, name, result, effect)
            except InfrastructureFault as exc:
                fault = exc
        self.fault = self.fault or fault
        raise fault  # type: ignore[misc] - COMMIT_RETRY_DELAYS is not empty

    # --- what the agent reads --------------------------------------------------------------

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The conversation so far: all messages, or — after a resume with
        continueTranscript false — a single digest of them (a fresh turn)."""
        if self.resume is not None and not self.resume.continue_transcript:
            texts = [m["text"] for m in self._full_transcript if m.get("text")]
            digest = f"Digest of {len(self._full_transcript)} earlier messages: " + " | ".join(
                t[:80] for t in texts[-5:]
            )
            return [{"role": "system", "text": digest, "digest": True}]
        return list(self._full_transcript)

    @property
    def last_user_message(self) -> dict[str, Any]:
        """The latest user message of the task (text, data, messageId)."""
        for m in reversed(self._full_transcript):
            if m["role"] == "user":
                return m
        return {"role": "user", "text": "", "data": [], "messageId": ""}

    @property
    def request_text(self) -> str:
        """The text of the client's first message."""
        for m in self._full_transcript:
            if m["role"] == "user" and m.get("text"):
                return m["text"]
        return ""

    async def sleep(self, seconds: float) -> None:
        """Wait, scaled by TASKDECK_AGENT_DELAY_SCALE and the task's `metadata.pace` (demo
        agents use it to be watchable; a demo can slow one task down)."""
        pace = self.metadata.get("pace", 1)
        pace = pace if isinstance(pace, int | float) and 0 < pace <= 100 else 1
        await asyncio.sleep(seconds * pace * conf.RUNTIME.delay_scale)

    # --- steps ----------------------------------------------------------------------------------

    def _next(self, name: str) -> tuple[int, StepRecord | None]:
        self._seq += 1
        record = self._steps.get(self._seq)
        if record is not None and record.name != name:
            raise NonDeterministicReplay(
                f"step {self._seq} was recorded as {record.name!r} but the agent now asks "
                f"for {name!r}; the agent's code changed under a paused run"
            )
        if record is not None:
            self.replayed += 1
        return self._seq, record

    async def _boundary(self, *, interaction: bool = False) -> Task:
        task = await self._db(_load_task)(self.task_id)
        if not _state_allows(task, interaction=interaction):
            raise Stop(f"task is {task.state}")
        return task

    async def step(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn` once per run: its (JSON-serialisable) result is recorded, and replays
        return the record. Sync functions run in a worker thread so that an
        interrupt_immediate pause can abandon them."""
        seq, record = self._next(name)
        if record is not None:
            return record.result
        await self._boundary()
        if inspect.iscoroutinefunction(fn):
            result = await fn(*args, **kwargs)
        else:
            result = await sync_to_async(fn, thread_sensitive=False)(*args, **kwargs)
        await self._record(seq, name, result, None)
        return result

    def _commit(self, seq: int, name: str, result: Any, effect: Callable | None) -> Any:
        """Record a step; with `effect`, run the effect and record it in one transaction
        (so database side effects happen exactly once)."""
        with transaction.atomic():
            task = _load_task(self.task_id, lock=True)
            if not RunLease.objects.filter(task_id=self.task_id, owner=WORKER_ID).exists():
                # a worker that stalled past its lease must not record over its successor
                raise Stop("lease lost to another worker")
            if effect is not None:
                if not _state_allows(task, interaction=False):
                    raise Stop(f"task is {task.state}")
                result = effect()
            elif task.state in TERMINAL or (
                task.current_suspension is not None
                and task.current_suspension.mode == Suspension.Mode.INTERRUPT_IMMEDIATE
            ):
                raise Stop(f"task is {task.state}; step {name!r} is discarded and will rerun")
            StepRecord.objects.create(
                task_id=self.task_id,
                seq=seq,
                name=name,
                result=result,
                completed_at=_now(),
                worker=WORKER_ID,
            )
        self._steps[seq] = StepRecord(seq=seq, name=name, result=result)
        return result

    async def _effect(self, name: str, effect: Callable[[], Any]) -> Any:
        seq, record = self._next(name)
        if record is not None:
            return record.result
        return await self._record(seq, name, None, effect)

    # --- output -----------------------------------------------------------------------------------

    async def emit_text(self, text: str) -> None:
        """Say something: an agent message in the history, shown as the task's status."""
        await self._effect(
            "text", lambda: services.emit_text(self.task_id, text, actor=self.actor).seq
        )

    async def progress(self, done: int, total: int) -> None:
        await self._effect(
            "progress",
            lambda: services.report_progress(self.task_id, done, total, actor=self.actor).progress,
        )

    async def add_artifact(
        self,
        name: str,
        *,
        text: str | None = None,
        data: dict | None = None,
        file: dict | None = None,
        artifact_id: str | None = None,
        append: bool = False,
    ) -> str:
        """`file` is an A2A file object: {"bytes" | "uri", "name"?, "mimeType"?}."""
        parts: list[dict[str, Any]] = []
        if text is not None:
            parts.append({"kind": "text", "text": text})
        if data is not None:
            parts.append({"kind": "data", "data": data})
        if file is not None:
            parts.append({"kind": "file", "file": file})
        return await self._effect(
            f"artifact:{name}",
            lambda: (
                services.add_artifact(
                    self.task_id,
                    actor=self.actor,
                    parts=parts,
                    name=name,
                    artifact_id=artifact_id,
                    append=append,
                ).artifact_id
            ),
        )

    # --- waiting ---------------------------------------------------------------------

    async def request_input(
        self,
        title: str,
        fields: list[dict[str, Any]] | None = None,
        explanation: str = "",
        description: str = "",
    ) -> dict[str, Any]:
        """Ask for input (`input-required`) and return the validated values once answered."""
        seq, record = self._next(f"input:{title}")
        if record is not None:
            return record.result
        request_id = f"step-{seq}"
        values = await self._db(_answer_to)(self.task_id, request_id)
        if values is not None:
            return await self._record(seq, f"input:{title}", values, None)
        task = await self._boundary(interaction=True)
        if (task.input_request or {}).get("requestId") == request_id:
            raise Stop("waiting for input")
        request: dict[str, Any] = {"requestId": request_id, "title": title}
        if fields:
            request["fields"] = fields
        if description:
            request["description"] = description
        await self._db(_refusal_stops(services.request_input))(
            self.task_id, actor=self.actor, explanation=explanation or title, request=request
        )
        raise Stop("waiting for input")

    async def await_resumption(
        self, reason: str, conditions: dict[str, Any] | None = None, summary: str = ""
    ) -> ResumeInfo:
        """Park the task (`paused-by-agent`) until an event, a trigger, its timeout or an
        explicit resume; returns how it was woken."""
        parsed = parse_conditions(conditions)
        return await self._wait(
            f"await:{reason}",
            lambda seq: services.park_task(
                self.task_id,
                actor=self.actor,
                reason=reason,
                conditions=parsed,
                summary=summary,
                metadata={"runtimeStep": seq},
            ),
        )

    async def pause_self(
        self, reason: str, *, expects: list[dict[str, Any]] | None = None
    ) -> ResumeInfo:
        """Ask to be paused as a client pause would (`paused-by-client`): for policies such
        as a spent budget, where an operator decides whether to go on. `expects`: the
        input the agent wants back, as input-request fields (the dashboard's resume form
        shows them; a resume whose input does not fit them is refused)."""
        metadata: dict[str, Any] = {}
        if expects:
            metadata["resumeInput"] = {"fields": expects}
        return await self._wait(
            f"pause:{reason}",
            lambda seq: services.pause_task(
                self.task_id,
                actor=self.actor,
                reason=reason,
                metadata={"runtimeStep": seq, **metadata},
            ),
        )

    async def _wait(self, name: str, open_suspension: Callable[[int], Any]) -> ResumeInfo:
        seq, record = self._next(name)
        if record is not None:
            self.resume = ResumeInfo(**record.result)
            return self.resume
        status, info = await self._db(_suspension_outcome)(self.task_id, seq)
        if status == "resumed":
            await self._record(seq, name, asdict(info), None)
            self.resume = info  # what `transcript` shows from here on follows this resume
            return info
        if status == "waiting":
            raise Stop("parked")
        await self._boundary(interaction=True)
        await self._db(_refusal_stops(open_suspension))(seq)
        raise Stop("parked")


# Waits before each attempt to commit a step (seconds): rides out a reconnect or a
# failover of a few seconds without giving the run up.
COMMIT_RETRY_DELAYS = (0.0, 0.2, 0.5, 1.0, 2.0)


def _recorded(task_id: str, seq: int) -> StepRecord | None:
    return StepRecord.objects.filter(task_id=task_id, seq=seq).first()


def _now():
    from django.utils import timezone

    return timezone.now()


def _load_task(task_id: str, *, lock: bool = False) -> Task:
    """The task with its open suspension. Locked reads fetch the suspension in a second
    statement: on PostgreSQL a row lock that waited for a concurrent pause re-reads the
    task row but not the joined suspension row inserted by that pause (it would come back
    null), so `select_related` and `select_for_update` must not be combined here."""
    try:
        if lock:
            task = Task.objects.select_for_update().get(pk=task_id)
            task.current_suspension  # noqa: B018 - loaded now, after the lock, on purpose
            return task
        return Task.objects.select_related("current_suspension").get(pk=task_id)
    except Task.DoesNotExist:
        raise Stop("task no longer exists") from None


def _answer_to(task_id: str, request_id: str) -> dict[str, Any] | None:
    answered = selectors.input_answer(task_id, request_id)
    return None if answered is None else answered.get("values") or {}


def _suspension_outcome(task_id: str, seq: int) -> tuple[str, ResumeInfo | None]:
    """("new" | "waiting" | "resumed", info) for the suspension the step at `seq` opened.
    An operator hold that superseded it counts: its resume wakes the agent."""
    suspensions = list(Suspension.objects.filter(task_id=task_id).order_by("id"))
    mine = next((s for s in suspensions if (s.metadata or {}).get("runtimeStep") == seq), None)
    if mine is None:
        return "new", None
    chain = [s for s in suspensions if s.id >= mine.id]
    for s in chain:
        if s.ending == Suspension.Ending.SUPERSEDED:
            continue
        if s.ending == Suspension.Ending.RESUMED:
            previous = State.PAUSED_BY_AGENT if s.initiator == "agent" else State.PAUSED_BY_CLIENT
            return "resumed", ResumeInfo.of(s, previous)
        return "waiting", None
    return "waiting", None
