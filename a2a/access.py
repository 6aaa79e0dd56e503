"""Who may see and act on which task: the one rule every door gets (issue 12).

Every task has an owner (Task.owner: the tenant of the principal that created it). A
restricted actor — an API key without the `operator` scope — sees and acts on its own
tenant's tasks only; anything else is reported as not found, exactly like a task that does
not exist, so ids cannot be probed. Operators (dashboard users with the operator permission,
keys with the `operator` scope), agents, the scheduler and the system are not restricted.

Services check it when they lock a task (`a2a.services._core.lock`); selectors filter with
`visible`; nothing else decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

if TYPE_CHECKING:
    from a2a.services import Actor


def may_act(actor: Actor, owner: str) -> bool:
    return not actor.restricted or owner == actor.tenant


def visible(qs: QuerySet, actor: Actor | None, owner_field: str = "owner") -> QuerySet:
    """`qs` narrowed to the rows `actor` may see (None: no narrowing, internal reads)."""
    if actor is None or not actor.restricted:
        return qs
    return qs.filter(**{owner_field: actor.tenant})
