"""The method table: each JSON-RPC method's params serializer, scope and handler.

Handlers take validated params and the call's context, call `a2a.services` / selectors,
and return wire dicts. Domain errors propagate; the view maps them to codes.
"""

from __future__ import annotations

from django.db import transaction

from a2a import access, rate_limits, selectors, services
from a2a.errors import NotAllowedNow, TaskNotFound, ValidationFailed
from a2a.lifecycle import TERMINAL, Dialect, State
from a2a.models import Task

from . import agent_card, extensions, wire, wire10
from . import params as p
from . import stream as streaming
from .errors import EXTENDED_CARD_NOT_CONFIGURED, ProtocolError
from .table import SEND_HOOKS, Call, Method


def _task_dict(task_id: str, call: Call, history_length: int | None = None) -> dict:
    bindu = call.dialect is Dialect.BINDU
    view = selectors.get_task(
        task_id, history_length=history_length, checkpoint=bindu, visible_to=call.actor
    )
    if "read" not in call.principal.scopes:  # a write-only key gets a receipt, not contents
        return wire.receipt(view.task, call.dialect)
    return wire.task(view, call.dialect)


def _skill(params_meta: dict, message_meta: dict) -> tuple[str | None, str]:
    """The skill the client asked for and where it said so (the service checks it)."""
    for where, meta in (("metadata.skill", params_meta), ("message.metadata.skill", message_meta)):
        if "skill" in meta:
            return meta["skill"], where
    return None, "metadata.skill"


def send_message(params: dict, call: Call) -> dict:
    """message/send: the task the message went to, as it is now (a repeated messageId:
    the first send's task; a blocking send then waits for it like the first did)."""
    task_id = _deliver(params, call)
    if call.settle_first:
        return {"id": task_id}
    return _task_dict(task_id, call, _history_length(params))


def stream_message(params: dict, call: Call) -> streaming.StreamPlan:
    """message/stream: deliver like message/send, then stream the task from there on: its
    snapshot first, then its events. A repeated messageId streams the first send's task
    the same way, from now."""
    task_id = _deliver(params, call)
    return streaming.plan(task_id, call.dialect, None, visible_to=call.actor)


def subscribe(params: dict, call: Call) -> streaming.StreamPlan:
    """1.0 SubscribeToTask: the task first, then its events until it ends; a task that has
    already ended has nothing to subscribe to (-32004, as the a2a-sdk answers) — unless
    the caller reconnects with Last-Event-ID: then it gets the events it missed, the last
    one ending the stream."""
    rate_limits.take("resync", call.actor)
    mine = access.visible(Task.objects.filter(pk=params["task"]), call.actor)
    state = mine.values_list("state", flat=True).first()
    if state is None:
        raise TaskNotFound(params["task"])
    if state in TERMINAL and call.last_event_id is None:
        # a reconnecting subscriber (Last-Event-ID) still gets what it missed, up to the end
        raise NotAllowedNow(State(state), f"task is {state} (terminal); nothing to subscribe to")
    return streaming.plan(
        params["task"],
        call.dialect,
        call.last_event_id,
        until_terminal=True,
        visible_to=call.actor,
    )


def extended_card(params: dict, call: Call) -> dict:
    """The card as the caller sees it. Without a key a caller is refused before it gets
    here (401), unless the operator lets anonymous callers in (TASKDECK_ANONYMOUS_SCOPES).
    Then the two versions differ, as their conformance kits do: 0.3's method is the
    *authenticated* card, and an anonymous caller gets -32007 (no such card for it); 1.0's
    GetExtendedAgentCard treats the anonymous caller as the principal it is (the anonymous
    tenant with those scopes) and answers its card, which tells it nothing its scopes do
    not already let it find out."""
    if call.version == "0.3" and call.actor.kind == "anonymous":
        raise ProtocolError(
            EXTENDED_CARD_NOT_CONFIGURED,
            "the authenticated extended card is for callers with an API key",
        )
    scopes = call.principal.scopes
    allowed = [
        name
        for name, m in METHODS.items()
        if m.version == call.version and all(s in scopes for s in m.scopes)
    ]
    return agent_card.extended_card(call.base_url, call.version, scopes, call.actor.tenant, allowed)


def resubscribe(params: dict, call: Call) -> streaming.StreamPlan:
    rate_limits.take("resync", call.actor)
    last = call.last_event_id
    meta_last = (params.get("metadata") or {}).get("lastEventId")
    if last is None and meta_last is not None:
        if not isinstance(meta_last, int) or isinstance(meta_last, bool) or meta_last < 0:
            raise ValidationFailed({"metadata.lastEventId": ["must be a non-negative integer"]})
        last = meta_last
    return streaming.plan(
        params["task"], call.dialect, last, until_terminal=True, visible_to=call.actor
    )


def _history_length(params: dict) -> int | None:
    return params.get("configuration", {}).get("historyLength")


def _deliver(params: dict, call: Call) -> str:
    """Create a task from the message, or add the message to the task it names; then
    let the send hooks act on the configuration, all in one transaction. A repeated
    message (the caller sent this messageId already) names the first delivery's task and
    writes nothing: the first send's configuration was acted on then."""
    configuration = params.get("configuration") or {}
    then = [after for hook in SEND_HOOKS if (after := hook(configuration, call)) is not None]
    if not then:
        return _deliver_message(params, call).task.id
    with transaction.atomic():
        delivered = _deliver_message(params, call)
        if not delivered.repeated:
            for after in then:
                after(delivered.task.id)
    return delivered.task.id


def _deliver_message(params: dict, call: Call) -> services.Delivered:
    msg = params["message"]
    incoming = services.IncomingMessage(
        message_id=msg["messageId"],
        parts=msg["parts"],
        role="user",
        metadata=msg["metadata"],
        reference_task_ids=msg["referenceTaskIds"],
    )
    skill, where = _skill(params["metadata"], msg["metadata"])
    try:
        delivered = services.receive_message(
            incoming,
            actor=call.actor,
            task_id=msg.get("taskId"),
            context_id=msg.get("contextId"),
            skill=skill,
            metadata=params["metadata"],
            origin=services.Origin(Task.Origin.A2A),
        )
    except ValidationFailed as exc:
        raise exc.renamed({"skill": where}) from None
    return delivered


def get_task(params: dict, call: Call) -> dict:
    return _task_dict(params["task"], call, params.get("historyLength"))


def list_tasks(params: dict, call: Call) -> dict:
    page = selectors.list_tasks(
        state=params.get("state") or params.get("status"),
        context_id=params.get("contextId"),
        page_size=params["pageSize"],
        page_token=params["pageToken"],
        history_length=params["historyLength"],
        include_artifacts=params["includeArtifacts"],
        updated_after=params.get("lastUpdatedAfter"),
        checkpoint=call.dialect is Dialect.BINDU,
        visible_to=call.actor,
    )
    return {
        "tasks": [
            wire.task(v, call.dialect, history=params["historyLength"] > 0) for v in page.tasks
        ],
        "nextPageToken": page.next_page_token,
        "pageSize": page.page_size,
        "totalSize": page.total_size,
    }


def cancel_task(params: dict, call: Call) -> dict:
    services.cancel_task(params["task"], actor=call.actor, reason=params.get("reason", ""))
    return _task_dict(params["task"], call)


def pause_task(params: dict, call: Call) -> dict:
    outcome = services.pause_task(
        params["task"],
        actor=call.actor,
        reason=params["reason"],
        mode=params["mode"],
        resume_when=params.get("resumeWhen"),
        metadata=params["metadata"],
        dialect=call.dialect,
    )
    if call.dialect is Dialect.BINDU:
        return _task_dict(params["task"], call)
    return wire.pause_result(outcome.task, outcome.suspension)


def await_resumption(params: dict, call: Call) -> dict:
    outcome = services.park_task(
        params["task"],
        actor=call.actor,
        reason=params["reason"],
        conditions=params.get("conditions"),
        summary=params["summary"],
        metadata=params["metadata"],
    )
    return wire.pause_result(outcome.task, outcome.suspension, agent=True)


def resume_task(params: dict, call: Call) -> dict:
    outcome = services.resume_task(
        params["task"],
        actor=call.actor,
        handle=params.get("handle"),
        resume_input=params.get("input"),
        continue_transcript=params["continueTranscript"],
        dialect=call.dialect,
    )
    if call.dialect is Dialect.BINDU:
        out = _task_dict(params["task"], call)
        out["status"]["state"] = wire.BINDU_RESUMED
        return out
    return wire.resume_result(outcome.task, outcome.suspension, outcome.previous_state)


METHODS: dict[str, Method] = {
    "message/send": Method(send_message, p.MessageSendParams, "write"),
    "message/stream": Method(stream_message, p.MessageSendParams, "write", streaming=True),
    "tasks/resubscribe": Method(resubscribe, p.TaskIdParams, "read", streaming=True),
    "tasks/get": Method(get_task, p.TaskQueryParams, "read"),
    "tasks/list": Method(list_tasks, p.TaskListParams, "read"),
    "tasks/cancel": Method(cancel_task, p.TaskIdParams, "write"),
    "tasks/pause": Method(pause_task, p.PauseParams, "write"),
    "tasks/resume": Method(resume_task, p.ResumeParams, "write"),
    "tasks/await_resumption": Method(await_resumption, p.AwaitResumptionParams, "agent"),
    "agent/getAuthenticatedExtendedCard": Method(extended_card, p.EmptyParams, ""),
}


def _send_10(result: dict) -> dict:
    if result.get("kind") == "message":
        return {"message": wire10.message(result)}
    return {"task": wire10.task(result)}


def _list_10(result: dict) -> dict:
    return {**result, "tasks": [wire10.task(t) for t in result["tasks"]]}


def _states_10(result: dict) -> dict:
    """Pause/resume/await results: their states in TASK_STATE_* form."""
    out = dict(result)
    for key in ("state", "previousState"):
        if key in out:
            out[key] = wire10.STATE_10.get(out[key], out[key])
    return out


def _v10(handler, params, scope: str, to_10=None, streaming: bool = False) -> Method:
    return Method(handler, params, scope, streaming=streaming, version="1.0", to_10=to_10)


METHODS.update(
    {
        "SendMessage": _v10(send_message, p.MessageSendParams, "write", _send_10),
        "SendStreamingMessage": _v10(stream_message, p.MessageSendParams, "write", streaming=True),
        "GetTask": _v10(get_task, p.TaskQueryParams, "read", wire10.task),
        "ListTasks": _v10(list_tasks, p.TaskListParams, "read", _list_10),
        "CancelTask": _v10(cancel_task, p.TaskIdParams, "write", wire10.task),
        "SubscribeToTask": _v10(subscribe, p.TaskIdParams, "read", streaming=True),
        "GetExtendedAgentCard": _v10(extended_card, p.EmptyParams, ""),
        "PauseTask": _v10(pause_task, p.PauseParams, "write", _states_10),
        "ResumeTask": _v10(resume_task, p.ResumeParams, "write", _states_10),
        "AwaitTaskResumption": _v10(await_resumption, p.AwaitResumptionParams, "agent", _states_10),
    }
)

# the other apps' methods and send hooks (push notifications: a2a/protocol/extensions.py)
extensions.extend(METHODS, SEND_HOOKS)
EXTENDED = True
