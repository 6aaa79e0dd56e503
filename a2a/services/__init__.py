"""The only code that changes a task (docs/design/house-rules.md, D1).

One function per action. Each runs in `transaction.atomic()`, locks the task row, asks
`a2a.lifecycle` whether the move is allowed, writes, appends its TaskEvent and publishes it.
JSON-RPC, the dashboard, the AG-UI bridge, the runtime and the scheduler all call these,
so they all get the same rules and the same errors.
"""

from a2a.services._core import SCHEDULER, SYSTEM, Actor, IncomingMessage, Origin
from a2a.services.contexts import claim_context
from a2a.services.inputs import ask_again, provide_input, request_input
from a2a.services.messages import Delivered, answer_input, receive_message
from a2a.services.notes import note_host, note_tool_call
from a2a.services.pausing import (
    PauseOutcome,
    ResumeOutcome,
    expire_suspension,
    park_task,
    pause_task,
    resume_task,
)
from a2a.services.reruns import RERUN, RETRY, rerun_task
from a2a.services.reruns import refusal as rerun_refusal
from a2a.services.tasks import (
    accepts_output,
    add_artifact,
    add_message,
    cancel_task,
    complete_task,
    create_task,
    emit_text,
    fail_task,
    note_pickup,
    note_retry,
    note_turn_ended,
    reject_task,
    report_progress,
    start_task,
)
from a2a.services.wakeups import emit_event

__all__ = [
    "RERUN",
    "RETRY",
    "SCHEDULER",
    "SYSTEM",
    "Actor",
    "Delivered",
    "IncomingMessage",
    "Origin",
    "PauseOutcome",
    "ResumeOutcome",
    "accepts_output",
    "add_artifact",
    "add_message",
    "answer_input",
    "ask_again",
    "cancel_task",
    "claim_context",
    "complete_task",
    "create_task",
    "emit_event",
    "emit_text",
    "expire_suspension",
    "fail_task",
    "note_host",
    "note_pickup",
    "note_retry",
    "note_tool_call",
    "note_turn_ended",
    "park_task",
    "pause_task",
    "provide_input",
    "receive_message",
    "reject_task",
    "report_progress",
    "request_input",
    "rerun_refusal",
    "rerun_task",
    "resume_task",
    "start_task",
]
