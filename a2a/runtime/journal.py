"""The step journal's answers to the core (`a2a.work`): how many steps a run recorded, and
carrying a failed run's steps over to its retry (issue 29, "retry from the failed step").

A retry is a new task (a terminal state stays terminal, as A2A clients read it) whose run
replays the failed run's recorded steps — their results, not their work — and runs the
rest, as Temporal's reset replays a workflow's history up to a point. What is carried:
every plain step (`ctx.step`), answered questions (`input:…`) and ended waits (`await:…`,
`pause:…`), at their positions. What is not: the output effects (`text`, `progress`,
`artifact:…`), which wrote to the failed task only; left unrecorded, they run again on the
retry and so write the retry's own messages, progress and artifacts — the same calls with
the same (replayed) values, and no external work is repeated.
"""

from __future__ import annotations

from django.utils import timezone

from a2a.runtime.models import StepRecord

# the step names `AgentContext` gives its output effects (context.py: emit_text, progress,
# add_artifact): agents' own steps must not use them
OUTPUT_NAMES = ("text", "progress")
OUTPUT_PREFIXES = ("artifact:",)


def is_output(name: str) -> bool:
    return name in OUTPUT_NAMES or name.startswith(OUTPUT_PREFIXES)


def recorded_steps(task_id: str) -> int:
    """How many steps the task's run recorded (one count over the (task, seq) index)."""
    return StepRecord.objects.filter(task_id=task_id).count()


def carry_steps(from_id: str, to_id: str) -> int:
    """Copy `from_id`'s recorded steps, output effects aside, to `to_id` at the same
    positions; returns how many were copied. In the caller's transaction, which also
    creates `to_id` and its job: its worker sees the steps or nothing."""
    at = timezone.now()
    rows = [
        StepRecord(
            task_id=to_id,
            seq=s.seq,
            name=s.name,
            result=s.result,
            completed_at=at,
            worker=f"carried:{s.worker}"[:64],
        )
        for s in StepRecord.objects.filter(task_id=from_id).order_by("seq")
        if not is_output(s.name)
    ]
    StepRecord.objects.bulk_create(rows)
    return len(rows)
