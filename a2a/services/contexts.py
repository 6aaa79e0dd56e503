"""Contexts belong to their tenant (issue 32; docs/protocol.md, "Contexts belong to their
tenant").

A contextId is owned by the tenant whose task (or ACP session) used it first: the
`Context` row written with that first use. A new task may join an existing context only
when its actor may act on the owner's tasks (`a2a.access.may_act`: the same tenant, or an
operator, agent or the system); anyone else is refused with the same words whoever owns
it, naming nothing but the contextId the caller sent. A contextId nobody has used yet is
the caller's to start, as before.

Why a row and not "the owner of the context's first task": two tenants starting the same
new contextId at once would both find no task and both go ahead. The row's primary key
settles it: the insert is `ON CONFLICT DO NOTHING` (PostgreSQL waits for the other
writer's commit), and what is read back after it is the winner's tenant, so the loser is
refused and its transaction goes on unharmed (no IntegrityError, no savepoint). A send
naming a context that has its row costs one indexed read; a new one, three more.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from a2a import access
from a2a.errors import ValidationFailed
from a2a.models import Context, Task
from a2a.prepared import Prepared, PreparedInsert
from a2a.services._core import Actor, now

# The refusal, the same whoever owns the context and whatever it holds (no oracle beyond
# "this id is taken"; a contextId is a server-made UUID unless a client chose it).
NOT_YOURS = "is not a context this caller may add to; omit contextId to start a new context"

_NEW = PreparedInsert(Context)  # a fresh server-made id: nobody can hold it yet
_OLDEST = Prepared(
    lambda context: (
        Task.objects.filter(context_id=context)
        .order_by("created_at", "id")
        .values_list("owner")[:1]
    ),
    "context",
)
_OWNER = Prepared(lambda id: Context.objects.filter(pk=id).values_list("tenant")[:1], "id")


def new(actor: Actor, at: datetime) -> str:
    """A new context for `actor`'s tenant (a UUID: nothing to race for)."""
    context_id = str(uuid.uuid4())
    _NEW.insert(context_id=context_id, tenant=actor.tenant, created_at=at)
    return context_id


def join(context_id: str, actor: Actor, at: datetime, *, field: str = "message.contextId") -> str:
    """`context_id`, claimed for `actor`'s tenant when nobody holds it yet; refused
    (ValidationFailed on `field`) when it is another tenant's that `actor` may not act
    for. Run inside the caller's transaction: the claim commits (or rolls back) with the
    task it is for. A context with tasks but no row (tasks written around the services: a
    restore, bulk SQL) is its oldest task's tenant's, as the migration made them."""
    found = _OWNER.first(id=context_id)
    if found is None:
        oldest = _OLDEST.first(context=context_id)
        tenant = oldest[0] if oldest is not None else actor.tenant
        Context.objects.bulk_create(
            [Context(context_id=context_id, tenant=tenant, created_at=at)],
            ignore_conflicts=True,  # a concurrent claim that committed first wins
        )
        found = _OWNER.first(id=context_id)
    owner = found[0] if found else actor.tenant  # (only if deleted meanwhile)
    if not access.may_act(actor, owner):
        raise ValidationFailed({field: [NOT_YOURS]})
    return context_id


def claim_context(context_id: str, actor: Actor) -> str:
    """Hold `context_id` for `actor`'s tenant before its first task (an ACP session's
    context is made when the session opens, its first task at the first prompt): a
    contextId learned in between cannot be taken by another tenant. Refused like `join`."""
    return join(context_id, actor, now(), field="contextId")
