"""Slash commands: how a user of any editor suspends, resumes, inspects, cancels and
answers (docs/acp.md, "Commands"; docs/design/acp-door.md, D69).

Zed, JetBrains, avante and acpx send no `session/suspend` and no resume with a handle; they
do offer the commands an agent advertises with `available_commands_update` and send them
as the prompt's text ("/suspend release freeze"). A prompt whose text starts with one of
these names is a command, never a message to the task; each maps to the same
`a2a.services` call as its RFC method (through `sessions`). This module parses and words
them (pure); the connection runs them.

Who paused a task is said in words everywhere the user meets a pause (`paused_by`), and
every refusal names the command that gets the user out (`way_out`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from acp import schema as s

from a2a.lifecycle import State
from a2a.models import Suspension

# name → (description, input hint or None). The order is the order an editor lists them.
COMMANDS: dict[str, tuple[str, str | None]] = {
    "status": ("Show the session's task: state, progress, pause, open question", None),
    "suspend": (
        "Pause the task (finish_step by default; interrupt_immediate or "
        "wait_for_completion first to choose)",
        "[mode] reason",
    ),
    "resume": ("Resume the paused task, optionally with input (text or JSON)", "[input]"),
    "answer": ("Answer the task's open question (as you would by typing it)", "answer"),
    "cancel": ("Cancel the task (and its open question)", None),
}
MODES = tuple(Suspension.Mode.values)
MODE_WORDS = {
    **{m: m for m in MODES},
    "now": Suspension.Mode.INTERRUPT_IMMEDIATE,
    "step": Suspension.Mode.FINISH_STEP,
    "end": Suspension.Mode.WAIT_FOR_COMPLETION,
}


@dataclass(frozen=True)
class Command:
    name: str
    arg: str  # the rest of the line(s), stripped


def parse(parts: list[dict[str, Any]]) -> Command | None:
    """The command a prompt is, or None: a prompt of text whose first word is `/<name>` of a
    known command (other text starting with "/", a path say, goes to the task as it is)."""
    if not parts or any(p.get("kind") != "text" for p in parts):
        return None
    text = "\n".join(p.get("text", "") for p in parts).strip()
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    head, nl, more = head.partition("\n")
    name = head.strip().lower()
    if name not in COMMANDS:
        return None
    return Command(name, (more + (" " if nl and rest else "") + rest).strip())


def suspend_args(arg: str) -> tuple[str, str]:
    """`/suspend [mode] reason` → (mode, reason)."""
    first, _, rest = arg.partition(" ")
    mode = MODE_WORDS.get(first.strip().lower())
    if mode is None:
        return Suspension.Mode.FINISH_STEP, arg.strip()
    return mode, rest.strip()


def resume_input(arg: str) -> Any:
    """`/resume [input]`: JSON when it parses as JSON, else the text; None when empty."""
    if not arg:
        return None
    try:
        return json.loads(arg)
    except ValueError:
        return arg


def available_commands() -> dict[str, Any]:
    """The `available_commands_update` an attached session gets (validated by the SDK)."""
    commands = [
        s.AvailableCommand(
            name=name,
            description=description,
            input=s.AvailableCommandInput(s.UnstructuredCommandInput(hint=hint)) if hint else None,
        )
        for name, (description, hint) in COMMANDS.items()
    ]
    update = s.AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=commands
    )
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)


def paused_by(actor: str, initiator: str | None) -> str:
    """Who paused, in words, from the pause's recorded actor (`kind:name`): an operator on
    the dashboard, the agent itself (a park, or a policy such as a spent budget), an API
    client or this editor's key; never "the client" for an operator's hold."""
    kind, _, name = (actor or "").partition(":")
    if initiator == "agent" or kind == "agent":
        return "the agent"
    if kind == "operator":
        return f"an operator ({name})" if name else "an operator"
    if kind in ("scheduler", "system"):
        return "Taskdeck"
    return "the client"  # an API client or an editor: its key is named beside the handle


def way_out(state: str, *, parked: bool = False) -> str:
    """The command that gets the user out of `state`."""
    if state in (State.PAUSED_BY_CLIENT, State.PAUSED_BY_AGENT):
        if parked:
            return "it resumes by itself when its condition fires; type /resume to resume it now"
        return "type /resume to continue (or /cancel to stop it)"
    if state in (State.INPUT_REQUIRED, State.AUTH_REQUIRED):
        return "type your answer (or /answer …), or /cancel to cancel it"
    if state in (State.SUBMITTED, State.WORKING):
        return "wait for it, or type /status, /suspend or /cancel"
    return "type a prompt to start a new task"


def status_text(task: Any, suspension: Any, question: str) -> str:
    """`/status`: the session's task as a few lines."""
    if task is None:
        return "No task yet: type a prompt to start one."
    lines = [f"Task {task.id} ({task.skill}): {task.state}"]
    if task.progress:
        lines.append(f"Progress: {task.progress.get('done')} of {task.progress.get('total')}")
    parked = bool(suspension and suspension.initiator == Suspension.Initiator.AGENT)
    if suspension is not None:
        who = paused_by(suspension.requested_by, suspension.initiator)
        lines.append(
            f"Paused by {who}: {suspension.reason or 'no reason given'} "
            f"(handle {suspension.handle})"
        )
    if question:
        lines.append(question)
    lines.append(way_out(task.state, parked=parked).capitalize() + ".")
    return "\n".join(lines)


def say(text: str) -> dict[str, Any]:
    """A command's answer as the agent's message."""
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


WHEN = {
    Suspension.Mode.FINISH_STEP: "after its current step",
    Suspension.Mode.INTERRUPT_IMMEDIATE: "now",
    Suspension.Mode.WAIT_FOR_COMPLETION: "when its current turn is over",
}


def suspending(mode: str, reason: str, state: str) -> str:
    """`/suspend`'s answer: when the task stops, and how to go on."""
    why = f": {reason}" if reason else ""
    when = "" if state in (State.PAUSED_BY_CLIENT,) else f" {WHEN.get(mode, 'soon')}"
    return f"Suspending the task{when} ({mode}){why}. Type /resume to continue."
