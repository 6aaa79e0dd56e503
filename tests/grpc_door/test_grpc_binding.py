"""A2A 1.0 over gRPC, end to end: the generated stubs against `manage.py run_grpc`, agents
run by real workers (the conformance agent, `tck`: a `tck-complete-task…` message completes
at once, `tck-stream-001…` streams an artifact, any other id leaves the task working)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from a2a import api_keys
from a2a.grpc_door.protos import a2a_pb2 as pb
from a2a.grpc_door.protos import pause_pb2
from a2a.models import Context, MessageReceipt, Task

from .conftest import Client, rpc_error

pytestmark = pytest.mark.django_db(transaction=True)


def send_request(prefix: str, **configuration) -> pb.SendMessageRequest:
    request = pb.SendMessageRequest(
        message=pb.Message(
            message_id=f"{prefix}-{uuid.uuid4().hex[:8]}",
            role=pb.ROLE_USER,
            parts=[pb.Part(text="over gRPC")],
        ),
        configuration=pb.SendMessageConfiguration(**configuration),
    )
    request.metadata.update({"skill": "tck"})
    return request


def working_task(client: Client) -> pb.Task:
    """A task whose agent leaves it working (returned at once, maybe still submitted)."""
    answer = client.a2a.SendMessage(
        send_request("grpc-idle", return_immediately=True), metadata=client.md()
    )
    return answer.task


def details(error: grpc.RpcError) -> dict[str, dict]:
    """The google.rpc.Status details of an error, by type name, as ProtoJSON."""
    status = rpc_status.from_call(error)
    assert status is not None, "no grpc-status-details-bin trailer"
    assert status.code == error.code().value[0] and status.message == error.details()
    found = {}
    for any_ in status.details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
            if any_.Is(kind.DESCRIPTOR):
                message = kind()
                any_.Unpack(message)
                found[kind.DESCRIPTOR.name] = json_format.MessageToDict(message)
    return found


def texts(parts: Iterable[pb.Part]) -> list[str]:
    return [p.text for p in parts]


# --- The A2A service ------------------------------------------------------------------------


def test_blocking_send_answers_once_the_agent_is_done_and_get_reads_it(client):
    answer = client.a2a.SendMessage(send_request("tck-complete-task"), metadata=client.md())
    task = answer.task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert texts(task.status.message.parts) == ["Hello from TCK"]
    assert task.status.message.role == pb.ROLE_AGENT

    got = client.a2a.GetTask(pb.GetTaskRequest(id=task.id, history_length=1), metadata=client.md())
    assert got.id == task.id and got.status.state == pb.TASK_STATE_COMPLETED
    assert len(got.history) == 1 and got.metadata["skill"] == "tck"


def test_send_returning_immediately_then_list_and_cancel(client):
    task = working_task(client)
    assert task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)
    assert texts(task.history[0].parts) == ["over gRPC"]

    listed = client.a2a.ListTasks(pb.ListTasksRequest(page_size=10), metadata=client.md())
    assert [t.id for t in listed.tasks] == [task.id] and listed.total_size == 1

    canceled = client.a2a.CancelTask(pb.CancelTaskRequest(id=task.id), metadata=client.md())
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    only_canceled = pb.ListTasksRequest(status=pb.TASK_STATE_CANCELED)
    assert client.a2a.ListTasks(only_canceled, metadata=client.md()).tasks[0].id == task.id


def test_streaming_send_runs_to_completion(client):
    events = list(
        client.a2a.SendStreamingMessage(send_request("tck-stream-001"), metadata=client.md())
    )
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update", kinds
    artifacts = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert [texts(a.parts) for a in artifacts] == [["Stream hello from TCK"]]
    last = events[-1].status_update
    assert last.task_id == events[0].task.id
    assert last.status.state == pb.TASK_STATE_COMPLETED


def test_subscribe_follows_the_task_until_it_ends(client):
    task = working_task(client)
    stream = client.a2a.SubscribeToTask(pb.SubscribeToTaskRequest(id=task.id), metadata=client.md())
    first = next(stream)
    assert first.task.id == task.id  # the task first, then its events
    client.a2a.CancelTask(pb.CancelTaskRequest(id=task.id), metadata=client.md())
    rest = list(stream)  # ends by itself with the terminal event
    assert rest and rest[-1].status_update.status.state == pb.TASK_STATE_CANCELED


def test_push_configs_round_trip(client):
    task = working_task(client)
    client.a2a.CancelTask(pb.CancelTaskRequest(id=task.id), metadata=client.md())  # no deliveries
    made = client.a2a.CreateTaskPushNotificationConfig(
        pb.TaskPushNotificationConfig(
            task_id=task.id, id="hook", url="https://example.com/hook", token="secret"
        ),
        metadata=client.md(),
    )
    assert (made.id, made.task_id, made.token) == ("hook", task.id, "********")
    ref = pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id="hook")
    assert client.a2a.GetTaskPushNotificationConfig(ref, metadata=client.md()) == made
    listed = pb.ListTaskPushNotificationConfigsRequest(task_id=task.id)
    assert list(
        client.a2a.ListTaskPushNotificationConfigs(listed, metadata=client.md()).configs
    ) == [made]
    gone = pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="hook")
    client.a2a.DeleteTaskPushNotificationConfig(gone, metadata=client.md())
    error = rpc_error(lambda: client.a2a.GetTaskPushNotificationConfig(ref, metadata=client.md()))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_a_revoked_keys_stream_ends_unauthenticated(client):
    """Within TASKDECK_REVALIDATE_SECONDS (0.5 s here); the call's deadline is the bound."""
    _, doomed = api_keys.create_key("doomed", ["read", "write"])
    answer = client.a2a.SendMessage(
        send_request("grpc-idle", return_immediately=True), metadata=client.md(doomed)
    )
    stream = client.a2a.SubscribeToTask(
        pb.SubscribeToTaskRequest(id=answer.task.id), metadata=client.md(doomed), timeout=10
    )
    assert next(stream).task.id == answer.task.id
    assert api_keys.revoke("doomed")
    error = rpc_error(lambda: list(stream))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error.details() == "the API key was revoked; the stream ends"


# --- Taskdeck's pause extension service -----------------------------------------------------


def test_pause_and_resume_through_the_extension_service(client):
    task = working_task(client)
    paused = client.pause.PauseTask(
        pause_pb2.PauseTaskRequest(task_id=task.id, reason="hold on"), metadata=client.md()
    )
    assert paused.task_id == task.id and paused.state == "TASK_STATE_PAUSED_BY_CLIENT"
    assert paused.handle.startswith("suspend-") and paused.reason == "hold on"
    assert paused.paused_at.seconds > 0

    # A2A's TaskState has no paused states: the extension's numbers, on an open enum
    got = client.a2a.GetTask(pb.GetTaskRequest(id=task.id), metadata=client.md())
    assert got.status.state == pause_pb2.TASK_STATE_PAUSED_BY_CLIENT
    assert got.metadata["pause"]["handle"] == paused.handle
    by_state = pb.ListTasksRequest(status=pause_pb2.TASK_STATE_PAUSED_BY_CLIENT)
    assert [t.id for t in client.a2a.ListTasks(by_state, metadata=client.md()).tasks] == [task.id]

    resumed = client.pause.ResumeTask(
        pause_pb2.ResumeTaskRequest(
            task_id=task.id, handle=paused.handle, continue_transcript=False
        ),
        metadata=client.md(),
    )
    assert resumed.state == "TASK_STATE_WORKING"
    assert resumed.previous_state == "TASK_STATE_PAUSED_BY_CLIENT"
    assert resumed.cause == "explicit_resume" and resumed.continue_transcript is False

    stale = pause_pb2.ResumeTaskRequest(task_id=task.id, handle=paused.handle)
    error = rpc_error(lambda: client.pause.ResumeTask(stale, metadata=client.md()))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert details(error)["ErrorInfo"]["reason"] == "TASK_NOT_PAUSED"


def test_an_agent_key_parks_a_working_task_with_a_timeout(client):
    """Struct numbers are doubles: durationMinutes 30 reaches the core as the integer 30."""
    task = working_task(client)
    subscribed = client.a2a.SubscribeToTask(
        pb.SubscribeToTaskRequest(id=task.id), metadata=client.md()
    )
    for event in subscribed:  # until the worker has started it
        state = (
            event.task.status.state if event.HasField("task") else event.status_update.status.state
        )
        if state == pb.TASK_STATE_WORKING:
            subscribed.cancel()
            break
    request = pause_pb2.AwaitTaskResumptionRequest(task_id=task.id, reason="the build")
    request.conditions.update({"timeout": {"durationMinutes": 30, "onTimeout": "fail"}})
    parked = client.pause.AwaitTaskResumption(request, metadata=client.md())
    assert parked.state == "TASK_STATE_PAUSED_BY_AGENT"
    assert parked.conditions["timeout"]["durationMinutes"] == 30
    assert parked.deadline.seconds - parked.paused_at.seconds == 30 * 60

    missing_reason = pause_pb2.AwaitTaskResumptionRequest(task_id=task.id)
    error = rpc_error(
        lambda: client.pause.AwaitTaskResumption(missing_reason, metadata=client.md())
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert details(error)["BadRequest"]["fieldViolations"][0]["field"] == "reason"


# --- Errors: a status code, the message, and the details in google.rpc.Status ---------------


def test_no_key_is_unauthenticated(client):
    error = rpc_error(
        lambda: client.a2a.GetTask(pb.GetTaskRequest(id="any"), metadata=client.md(token=""))
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "API key" in error.details()
    bad = rpc_error(lambda: client.a2a.ListTasks(pb.ListTasksRequest(), metadata=client.md("nope")))
    assert bad.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_key_without_the_scope_is_permission_denied(client):
    _, reader = api_keys.create_key("grpc-reader", ["read"])
    error = rpc_error(
        lambda: client.a2a.SendMessage(
            send_request("tck-complete-task"), metadata=client.md(reader)
        )
    )
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    info = details(error)["ErrorInfo"]
    assert info["reason"] == "INVALID_REQUEST" and info["metadata"]["requiredScope"] == "write"


def test_an_unknown_task_is_not_found_with_its_reason(client):
    error = rpc_error(
        lambda: client.a2a.GetTask(pb.GetTaskRequest(id="no-such-task"), metadata=client.md())
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND
    info = details(error)["ErrorInfo"]
    assert info["reason"] == "TASK_NOT_FOUND" and info["domain"] == "a2a-protocol.org"
    assert info["metadata"]["taskId"] == "no-such-task"
    # streams refuse the same way, before any event
    error = rpc_error(
        lambda: list(
            client.a2a.SubscribeToTask(pb.SubscribeToTaskRequest(id="nope"), metadata=client.md())
        )
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_bad_params_are_invalid_argument_with_the_fields(client):
    request = send_request("tck-complete-task")
    del request.message.parts[:]
    error = rpc_error(lambda: client.a2a.SendMessage(request, metadata=client.md()))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    found = details(error)
    assert found["ErrorInfo"]["reason"] == "INVALID_PARAMS"
    fields = [v["field"] for v in found["BadRequest"]["fieldViolations"]]
    assert fields == ["message.parts"]


GARBAGE = b"not a protobuf \xff\xff"  # 'n' opens field 13 with wire type 6: no such type


@pytest.mark.parametrize("rpc", ["SendMessage", "SendStreamingMessage"])
def test_bytes_that_are_not_the_message_are_invalid_argument(grpc_address, client, rpc):
    """Issue 32: raw bytes sent on a real channel (no stub to serialize them) are
    INVALID_ARGUMENT naming the message expected, never UNKNOWN with a Python exception;
    nothing is written, and a caller without a key still hears UNAUTHENTICATED first."""
    before = Task.objects.count()
    with grpc.insecure_channel(grpc_address) as channel:
        path = f"/lf.a2a.v1.A2AService/{rpc}"
        call = (channel.unary_stream if rpc == "SendStreamingMessage" else channel.unary_unary)(
            path, request_serializer=None, response_deserializer=None
        )
        error = rpc_error(lambda: list(call(GARBAGE, metadata=client.md())))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (
            error.details() == "the request's bytes are not a protobuf lf.a2a.v1.SendMessageRequest"
        )
        assert details(error) == {}  # as a body that is not JSON: no A2A reason applies
        anonymous = rpc_error(lambda: list(call(GARBAGE, metadata=client.md(token=""))))
        assert anonymous.code() == grpc.StatusCode.UNAUTHENTICATED
    assert Task.objects.count() == before


def test_another_tenants_context_is_refused_like_any_other(client):
    """A key of another tenant naming the task's contextId: INVALID_ARGUMENT on
    message.contextId, naming nothing of the owner, and no task or context is written
    (docs/protocol.md, "Contexts belong to their tenant")."""
    mine = working_task(client)
    _, other = api_keys.create_key("grpc-other", ["read", "write"])
    request = send_request("grpc-intruder", return_immediately=True)
    request.message.context_id = mine.context_id
    before = sorted(Task.objects.values_list("id", "context_id", "owner"))
    error = rpc_error(lambda: client.a2a.SendMessage(request, metadata=client.md(other)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    found = details(error)
    assert found["ErrorInfo"]["reason"] == "INVALID_PARAMS"
    assert [v["field"] for v in found["BadRequest"]["fieldViolations"]] == ["message.contextId"]
    assert "test-client" not in error.details() and mine.id not in error.details()
    assert sorted(Task.objects.values_list("id", "context_id", "owner")) == before
    assert Context.objects.get(pk=mine.context_id).tenant == "key:test-client"
    # the owner's own key adds to it
    request.message.message_id = f"grpc-mine-{uuid.uuid4().hex[:8]}"
    again = client.a2a.SendMessage(request, metadata=client.md())
    assert again.task.context_id == mine.context_id


def test_a_part_of_a_media_type_the_skill_does_not_take_is_refused(client):
    """The kit's CORE-SEND-003: a raw part of application/x-unsupported-tck-type is
    ContentTypeNotSupportedError, INVALID_ARGUMENT with the A2A reason; nothing written."""
    request = send_request("grpc-odd-media")
    request.message.parts.append(
        pb.Part(raw=b"tck", media_type="application/x-unsupported-tck-type")
    )
    before = (Task.objects.count(), Context.objects.count(), MessageReceipt.objects.count())
    error = rpc_error(lambda: client.a2a.SendMessage(request, metadata=client.md()))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = details(error)["ErrorInfo"]
    assert info["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert info["metadata"]["mediaType"] == "application/x-unsupported-tck-type"
    assert info["metadata"]["field"] == "message.parts.1"
    assert (Task.objects.count(), Context.objects.count(), MessageReceipt.objects.count()) == before


def test_cancel_of_a_finished_task_is_a_failed_precondition(client):
    task = client.a2a.SendMessage(send_request("tck-complete-task"), metadata=client.md()).task
    error = rpc_error(
        lambda: client.a2a.CancelTask(pb.CancelTaskRequest(id=task.id), metadata=client.md())
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert details(error)["ErrorInfo"]["reason"] == "TASK_NOT_CANCELABLE"


def test_only_version_1_is_spoken(client):
    """No a2a-version means 1.0 here; naming another version is refused."""
    error = rpc_error(
        lambda: client.a2a.ListTasks(pb.ListTasksRequest(), metadata=client.md(a2a_version="0.3"))
    )
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    assert details(error)["ErrorInfo"]["reason"] == "VERSION_NOT_SUPPORTED"


def test_a_request_over_the_size_limit_is_refused_by_grpc(client):
    """TASKDECK_MAX_REQUEST_BYTES (1 MB) holds here too, as HTTP 413 does on JSON-RPC."""
    request = send_request("tck-complete-task")
    request.message.parts[0].text = "x" * 1_100_000
    error = rpc_error(lambda: client.a2a.SendMessage(request, metadata=client.md()))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_bindu_extension_header_still_gets_the_typed_pause_answer(client):
    """Bindu's pause results are task-shaped: over gRPC the RFC dialect is fixed, so a
    client naming Bindu's extension gets a handle, not an empty message."""
    task = working_task(client)
    bindu = "https://getbindu.com/extensions/pause-resume/v1"
    paused = client.pause.PauseTask(
        pause_pb2.PauseTaskRequest(task_id=task.id, reason="freeze"),
        metadata=client.md(a2a_extensions=bindu),
    )
    assert paused.state == "TASK_STATE_PAUSED_BY_CLIENT" and paused.handle


def test_a_port_another_grpc_server_holds_is_refused():
    """grpcio shares a port between servers by default (SO_REUSEPORT): a second run_grpc
    on a taken port must fail, not split the first one's traffic."""
    import asyncio

    from a2a.grpc_door.server import build

    async def bind_twice() -> None:  # grpc.aio servers belong to a running event loop
        first, port = build("127.0.0.1:0")
        with pytest.raises(OSError, match="cannot listen"):
            build(f"127.0.0.1:{port}")
        await first.stop(None)

    asyncio.run(bind_twice())
