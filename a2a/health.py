"""`GET /healthz`: does this server reach its database, and how far is the live view behind?

The AG-UI projection runs after the writer's commit (docs/design/projection-after-commit.md,
D8): every committed TaskEvent leaves a due row (a2a.models.ProjectionDue) until a
projection pass consumes it, so the age of the oldest due row is how far the live view is
behind the tasks — the *lag*. It is read here (`projection_lag`), in the core, once for
everyone: this view, the AG-UI socket's lag notice (agui/fanout.py, through
`agui.projection.lag`) and the benches.

The answer is for load balancers and operators, so it is unauthenticated and shows counts
and ages only, never task data; nobody may cache it (`Cache-Control: no-store`):

    {"status": "ok" | "lagging", "database": "ok",
     "projection": {"lagSeconds": 0.012, "dueRows": 3, "dueTasks": 2, "mode": "thread"}}

Parts outside the core add what they know of this process (`add_section`): the AG-UI
door adds `"sockets": {"open": 3, "readers": 1}` — its open sockets and log readers (one
while any socket is open, 0 once the last went; agui/fanout.py), the dashboard
`"websockets": {"closedNotReading": 0}` (dashboard/websocket_limits.py). Per process:
behind a balancer, each web process answers for itself.

Under `manage.py serve` the answer also carries `"processes"`: what the supervisor last
wrote about its children (a2a/supervision.py: each child's name, pid, state and restarts;
"ok", "restarting", "degraded" when one was given up on, "gone" when the supervisor itself
died). It does not change the HTTP status: this process answers, so it can serve; a dead
worker is for an operator to see, not a reason to take the web out of rotation.

HTTP 200 whenever the database answers, lagging or not: the projection's backlog is one
table every server shares, so draining one server for it would only move its load to the
others. `"lagging"` past LAG_WARN_SECONDS. HTTP 503 (`"database": "unavailable"`) when the
query fails: that server cannot serve anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DatabaseError
from django.db.models import Count, Min
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from a2a import conf
from a2a.models import ProjectionDue
from a2a.supervision import read_status

log = logging.getLogger(__name__)

# Past this the answer says "lagging" (still 200). The projector thread projects a change
# within milliseconds and the scheduler's sweep takes what a dead process left after about
# 2.25 s (agui.projection.SWEEP_AFTER_SECONDS + a tick), so 5 s means neither keeps up.
LAG_WARN_SECONDS = 5.0

# What parts outside the core know of this process, by name (agui: "sockets", its AG-UI
# sockets and log readers): registered at start-up (an AppConfig.ready), read per request.
SECTIONS: dict[str, Callable[[], dict]] = {}


def add_section(name: str, read: Callable[[], dict]) -> None:
    """Show `read()` under `name` in every /healthz answer (counts only, never task data)."""
    SECTIONS[name] = read


@dataclass(frozen=True)
class Lag:
    """How far the live view is behind the tasks: the age of the oldest due row (0 when
    there is none), and how many due rows and tasks there are."""

    seconds: float
    due_rows: int
    due_tasks: int


def projection_lag() -> Lag:
    """One statement over a table that holds only the backlog (empty when the projection
    keeps up): min(at), count(*), count(DISTINCT task_id). The age is taken against this
    process's clock, as `at` was written with the writing process's (the event's
    created_at)."""
    found = ProjectionDue.objects.aggregate(
        oldest=Min("at"), rows=Count("*"), tasks=Count("task_id", distinct=True)
    )
    oldest = found["oldest"]
    if oldest is None:
        return Lag(0.0, 0, 0)
    seconds = max(0.0, (timezone.now() - oldest).total_seconds())
    return Lag(seconds, found["rows"], found["tasks"])


@csrf_exempt  # read-only: require_safe answers 405 to anything unsafe
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    mode = conf.VIEW.projection
    try:
        lag = projection_lag()
    except DatabaseError as exc:
        log.warning("health check: the database did not answer: %s", exc)
        status = 503
        body = {"status": "unavailable", "database": "unavailable", "projection": {"mode": mode}}
    else:
        status = 200
        body = {
            "status": "lagging" if lag.seconds > LAG_WARN_SECONDS else "ok",
            "database": "ok",
            "projection": {
                "lagSeconds": round(lag.seconds, 3),
                "dueRows": lag.due_rows,
                "dueTasks": lag.due_tasks,
                "mode": mode,
            },
        }
    for name, read in SECTIONS.items():
        body[name] = read()
    if (processes := read_status(conf.TASKDECK.serve_status)) is not None:
        body["processes"] = processes
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response
