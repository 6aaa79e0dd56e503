"""Pauses and resumes, as a hosted agent hears of them (the seed's suspend RFC).

- A client's pause: an agent that declares the seed's `supportsSuspend` gets
  `session/suspend` with the pause's mode (its answer's handle is kept for the resume);
  with any other, `interrupt_immediate` is `session/cancel` (the turn's work is lost, and
  the timeline says so), `finish_step` holds the agent's output and permission answers
  until the resume (the recorder and PermissionRequests hold them), and
  `wait_for_completion` lets the turn end.
- The agent's own park: its `session/await_resumption` parks the task with its
  conditions (validated as `tasks/await_resumption` validates them) and is answered with
  Taskdeck's handle; Taskdeck fires the resume.
- A resume the agent must hear of (its own park, or a pause it was told of) is passed on
  with `session/resume` and the seed's `handle`, `input` and `continueTranscript`; a
  standard agent's pause ends with nothing to say: its next prompt goes on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from acp import RequestError

from a2a import services
from a2a.acp_host import store
from a2a.acp_host.agent_process import AgentGone
from a2a.conditions import parse_conditions
from a2a.errors import TaskError
from a2a.lifecycle import TransitionRefused
from a2a.models import Suspension
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.validation import ValidationFailed

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun


def suspend_caps(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The seed's capabilities, where Taskdeck's ACP door puts them (`_meta`) or at the
    root of agentCapabilities, as the seed writes them."""
    meta = (capabilities.get("_meta") or {}).get("taskdeck/suspend") or {}
    return {
        "supportsSuspend": bool(meta.get("supportsSuspend") or capabilities.get("supportsSuspend")),
        "supportsAwaitResumption": bool(
            meta.get("supportsAwaitResumption") or capabilities.get("supportsAwaitResumption")
        ),
    }


class Pauses:
    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.suspending: asyncio.Task | None = None  # a session/suspend in flight

    # ----- resumes ------------------------------------------------------------------------

    def can_resume(self) -> bool:
        caps = self.run.row.capabilities or {}
        return "resume" in (caps.get("sessionCapabilities") or {})

    def resumes_to_agent(self, s: Suspension) -> bool:
        """A resume the agent must hear of: its own park, or a pause it was told of with
        session/suspend. A standard agent's pause ends with nothing to say: its next
        prompt goes on."""
        row = self.run.row
        ours = (s.metadata or {}).get("acp") == "await_resumption"
        told = s.id == row.acted_on and bool(row.agent_handle)
        return (ours or told) and self.can_resume()

    async def pass_resume(self, last: Suspension) -> str:
        """A turn's work: session/resume with the seed's fields."""
        run = self.run
        params: dict[str, Any] = {
            "sessionId": run.row.session_id,
            "cwd": run.agent_process.cwd(),
            "mcpServers": [],
            "continueTranscript": last.continue_transcript is not False,
        }
        if (last.metadata or {}).get("acp") == "await_resumption":
            params["handle"] = last.handle
        elif run.row.agent_handle:
            params["handle"] = run.row.agent_handle
        if last.resume_input is not None:
            params["input"] = last.resume_input
        await run.agent_process.request("session/resume", params, "resume")
        return "end_turn"

    # ----- a client's pause ---------------------------------------------------------------

    async def on_pause(self, susp: Suspension) -> None:
        """A pause the agent has not heard of yet."""
        run = self.run
        run.row.acted_on = susp.id
        run.row.agent_handle = ""  # a handle belongs to one suspension
        await in_db(store.save)(run.row, "acted_on", "agent_handle")
        if susp.initiator != Suspension.Initiator.CLIENT:
            return  # the agent's own park: it knows
        caps = suspend_caps(run.row.capabilities or {})
        if run.agent_process.started and caps["supportsSuspend"]:
            # not awaited here: an agent may answer only once its step is over, and that
            # step may wait on a permission answer this loop must still be free to pass
            self.suspending = asyncio.ensure_future(self.suspend(susp))
        elif susp.mode == Suspension.Mode.INTERRUPT_IMMEDIATE and run.turns.running:
            await run.turns.cancel(
                "paused with interrupt_immediate: the agent cannot suspend, so its turn was "
                "cancelled (session/cancel) and that turn's work is lost"
            )

    async def suspend(self, susp: Suspension) -> None:
        run = self.run
        params = {"sessionId": run.row.session_id, "mode": susp.mode or "finish_step"}
        if susp.reason:
            params["reason"] = susp.reason
        try:
            answer = await run.agent_process.request("session/suspend", params, "suspend")
        except (RequestError, AgentGone) as exc:
            await run.note("refused", f"the agent refused session/suspend: {exc}")
            return
        handle = answer.get("handle") if isinstance(answer, dict) else None
        if run.row.acted_on == susp.id:  # still the pause it answered
            run.row.agent_handle = str(handle or "")[:200]
            await in_db(store.save)(run.row, "agent_handle")

    # ----- the agent's own park -----------------------------------------------------------

    async def park(self, params: Any) -> dict[str, Any]:
        """The seed's agent → client `session/await_resumption`: park the task."""
        run = self.run
        if not isinstance(params, dict):
            raise RequestError.invalid_params({"details": "params must be an object"})
        if params.get("sessionId") != run.row.session_id:
            raise RequestError(-32002, "unknown session", {"sessionId": params.get("sessionId")})
        reason = params.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise RequestError.invalid_params({"reason": ["must be a non-empty string"]})
        try:
            conditions = parse_conditions(params.get("conditions"))
        except ValidationFailed as exc:
            raise RequestError.invalid_params(exc.prefixed("conditions").errors) from None
        await run.recorder.drain()
        await run.recorder.flush_text()
        summary = params.get("summary") if isinstance(params.get("summary"), str) else ""
        try:
            outcome = await in_db(services.park_task)(
                run.task_id,
                actor=run.actor,
                reason=reason,
                conditions=conditions,
                summary=summary,
                metadata={"acp": "await_resumption"},
            )
        except ValidationFailed as exc:
            raise RequestError.invalid_params(exc.errors) from None
        except (TaskError, TransitionRefused) as exc:
            raise RequestError(-32011, f"cannot park now: {exc}") from None
        susp = outcome.suspension
        run.row.acted_on = susp.id
        await in_db(store.save)(run.row, "acted_on")
        run.nudge.set()
        return {"handle": susp.handle, "suspendedAt": susp.suspended_at.isoformat()}
