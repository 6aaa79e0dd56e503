"""A hosted agent's permission requests, asked of people as the task's input requests.

The agent's `session/request_permission` becomes an input request (a2a.acp_host.
permissions maps the two); the answer, validated by the services, goes back as the
permission's outcome. One question is open at a time (parallel tool calls queue); a
request made while the task is paused (finish_step holds the agent's output) is asked
when the task works again; a request whose turn was cancelled, or whose task ended, is
answered `cancelled` — ACP asks the client to, and an agent may wait for it before it
stops.

A question left open by a supervisor that died (the agent that asked it died with it) is
taken up by the session's next holder (`take_up`): the agent's session is taken up again,
the question withdrawn and asked again in one change (services.ask_again: an answer to
the old one is refused from then on), and its answer goes to the agent as its next
prompt, in words and in `_meta["taskdeck/permission"]` (the tool call and the outcome):
the request it made is gone with its process, so no ACP response can carry it.

A request whose scope the operator answered with "Always allow" / "Always reject"
earlier in the session is answered from that memory instead, without asking
(a2a.acp_host.permission_memory).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from acp import schema as s

from a2a import selectors, services
from a2a.acp_host import store
from a2a.acp_host.permission_memory import PermissionMemory
from a2a.acp_host.permissions import answer_to_outcome, as_input_request
from a2a.errors import TaskError
from a2a.lifecycle import TERMINAL, State, TransitionRefused
from a2a.runtime.faults import in_db_thread as in_db  # fault-guarded, one DB thread
from a2a.validation import ValidationFailed

if TYPE_CHECKING:
    from a2a.acp_host.session import HostedRun

log = logging.getLogger(__name__)

CANCELLED = s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
PERMISSION_META = "taskdeck/permission"  # the prompt's _meta carrying a re-asked answer


def _asked_here(request: dict[str, Any] | None) -> bool:
    """An input request this host made of an agent's permission request."""
    acp = ((request or {}).get("metadata") or {}).get("acp") or {}
    return isinstance(acp, dict) and bool(acp.get("permissionOptions"))


def answer_prompt(request: dict[str, Any], answered: dict[str, Any]) -> tuple[str, dict]:
    """The answer to a question asked again after a takeover, as the agent's next prompt:
    the words an agent driven by a model understands, and the outcome it would have got
    (ACP's RequestPermissionResponse) with the tool call, for an agent that reads `_meta`."""
    acp = request["metadata"]["acp"]
    options = [s.PermissionOption.model_validate(o) for o in acp["permissionOptions"]]
    outcome = answer_to_outcome(answered, options).outcome
    call = acp.get("toolCall") or {}
    title = call.get("title") or request.get("title") or "a tool call"
    if isinstance(outcome, s.AllowedOutcome):
        chosen = next(o for o in options if o.option_id == outcome.option_id)
        said = f"the answer is {chosen.name} ({chosen.kind}): go ahead with it"
    else:
        said = "no option was chosen: do not do it"
    text = (
        f"Taskdeck: you asked for permission to run {title!r}"
        + (f" (tool call {call['toolCallId']})" if call.get("toolCallId") else "")
        + " just before your host stopped, and that request was lost with it. The question "
        f"was asked again and {said}."
    )
    meta = {
        "toolCall": call,
        "outcome": outcome.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    return text, {PERMISSION_META: meta}


class PermissionRequests:
    def __init__(self, run: HostedRun) -> None:
        self.run = run
        self.open: tuple[str, list[Any], asyncio.Future] | None = None  # asked, unanswered
        self.asking = 0  # permission requests in hand (asked, or held while paused)
        self.lock = asyncio.Lock()  # one open input request at a time
        self.works = asyncio.Event()  # the task is working: held requests may be asked
        self.epoch = 0  # bumped when a turn is cancelled: its held requests are void
        # a question a dead supervisor left open, asked again: (its new requestId, the
        # request); once answered, `answer` is the next turn's prompt (text, _meta)
        self.reasked: tuple[str, dict[str, Any]] | None = None
        self.answer: tuple[str, dict[str, Any]] | None = None
        self.memory = PermissionMemory(run)  # "Always allow" / "Always reject" answers

    @property
    def busy(self) -> bool:
        """The agent waits for a person (asked, or to be asked): it is not stalling."""
        return self.open is not None or bool(self.asking)

    async def follow(self, state: str) -> None:
        """The task's state, as the loop read it: a working task takes held questions
        and may have answered the open one."""
        if state != State.WORKING:
            self.works.clear()
            return
        self.works.set()
        if self.open is not None:
            await self.deliver()
        if self.reasked is not None:
            request_id, request = self.reasked
            answered = await in_db(selectors.input_answer)(self.run.task_id, request_id)
            if answered is not None:
                self.reasked, self.answer = None, answer_prompt(request, answered)

    def orphaned(self, request: dict[str, Any] | None) -> bool:
        """An open permission question this session did not ask (nor asked again): its
        asker, a supervisor that held the session before, is gone, and the agent request
        it stood for with it."""
        if not _asked_here(request) or self.asking or self.open is not None:
            return False
        return self.reasked is None or self.reasked[0] != request.get("requestId")

    async def take_up(self, request: dict[str, Any]) -> None:
        """Take an orphaned question up: the agent's session first (a process of its own,
        the session resumed or loaded), then the question withdrawn and asked again. An
        answer the old one got meanwhile is passed on as the new one's would be."""
        run = self.run
        await run.ensure_session()
        old = request["requestId"]
        try:
            new = await in_db(services.ask_again)(run.task_id, actor=run.actor, withdrawn=old)
        except (TaskError, TransitionRefused):  # answered, cancelled or paused meanwhile
            answered = await in_db(selectors.input_answer)(run.task_id, old)
            if answered is not None:
                self.answer = answer_prompt(request, answered)
            return
        self.reasked = (new["requestId"], new)
        await run.note(
            "asked_again",
            f"the supervisor that asked {request.get('title') or 'a question'!r} ({old}) "
            f"stopped before the agent had its answer: that question was withdrawn and "
            f"asked again ({new['requestId']}); its answer goes to the agent as its next "
            "prompt",
        )

    async def on_request(self, params: Any) -> Any:
        """The route of `session/request_permission`: its params unvalidated by the SDK
        (whose typed route would let `_meta` keys replace the options)."""
        request = s.RequestPermissionRequest.model_validate(params)
        return await self.ask(request.tool_call, request.options)

    async def ask(self, tool_call: Any, options: list[Any]) -> Any:
        """session/request_permission: an input request; the answer is the outcome."""
        run = self.run
        epoch = self.epoch
        self.asking += 1
        try:
            await run.recorder.drain()
            await run.recorder.flush_text()
            async with self.lock:  # parallel tool calls: one question at a time
                while True:
                    if self.epoch != epoch:
                        return CANCELLED  # its turn was cancelled meanwhile
                    state = await in_db(store.task_state)(run.task_id)
                    if state in TERMINAL or state is None:
                        return CANCELLED
                    if state == State.WORKING:
                        break
                    # paused (finish_step holds it), or another question open: asked when
                    # the task works again
                    self.works.clear()
                    run.nudge.set()
                    await self.works.wait()
                remembered = await self.memory.answer(tool_call, options)
                if remembered is not None:
                    return remembered  # asked before with "always": nobody is asked again
                request = as_input_request(tool_call, options)
                explanation = request.pop("explanation")
                # the call, for asking again after a takeover (`answer_prompt`)
                request["metadata"]["acp"]["toolCall"] = {
                    "toolCallId": str(getattr(tool_call, "tool_call_id", "") or ""),
                    "title": str(getattr(tool_call, "title", "") or ""),
                }
                try:
                    canonical = await in_db(services.request_input)(
                        run.task_id, actor=run.actor, explanation=explanation, request=request
                    )
                except (TaskError, TransitionRefused, ValidationFailed) as exc:
                    log.warning("task %s: permission request not asked: %s", run.task_id, exc)
                    return CANCELLED
                self.memory.asking(canonical["requestId"], tool_call)
                fut: asyncio.Future = asyncio.get_running_loop().create_future()
                self.open = (canonical["requestId"], options, fut)
                run.nudge.set()
                return await fut
        finally:
            self.asking -= 1

    async def deliver(self) -> None:
        """The open question's answer, once there is one, goes to the agent."""
        assert self.open is not None
        request_id, options, fut = self.open
        answered = await in_db(selectors.input_answer)(self.run.task_id, request_id)
        if answered is None:
            return
        self.open = None
        outcome = answer_to_outcome(answered, options)
        if not fut.done():
            fut.set_result(outcome)
        await self.memory.answered(request_id, outcome, options)

    def void(self) -> None:
        """The turn is being cancelled: requests it held while paused are void now."""
        self.epoch += 1
        self.works.set()

    def withdraw(self) -> None:
        """A pending permission request is answered `cancelled` (the turn is cancelled or
        over): ACP asks the client to, and an agent may wait for it before it stops."""
        if self.open is not None:
            _, _, fut = self.open
            if not fut.done():
                fut.set_result(CANCELLED)
            self.open = None
        self.void()
