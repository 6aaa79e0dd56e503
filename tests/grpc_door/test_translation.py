"""The binding's translations on their own (no server): metadata as service parameters,
messages ↔ the core's JSON where ProtoJSON differs from it, errors as google.rpc.Status."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import empty_pb2
from google.rpc import error_details_pb2, status_pb2

from a2a.grpc_door import protojson
from a2a.grpc_door.metadata import ServiceParameters
from a2a.grpc_door.protos import a2a_pb2 as pb
from a2a.grpc_door.protos import pause_pb2
from a2a.grpc_door.status import status_of
from a2a.protocol.errors import INVALID_PARAMS, TASK_NOT_FOUND, ProtocolError, invalid_params


def test_metadata_reads_like_http_headers():
    headers = ServiceParameters(
        [
            ("authorization", "Bearer k"),
            ("a2a-extensions", "https://a"),
            ("a2a-extensions", "https://b"),
            ("trace-bin", b"\x00"),
        ]
    )
    assert headers.get("Authorization") == "Bearer k"
    assert headers.get("A2A-Extensions") == "https://a, https://b"
    assert headers.get("A2A-Version") == "1.0"  # a 1.0-only binding
    assert headers.get("Last-Event-ID") is None and "trace-bin" not in headers


@pytest.mark.parametrize(("sent", "read"), [("0.3", "0.3"), ("2.0", "2.0"), (" ", "1.0")])
def test_an_explicit_version_is_passed_on_for_the_core_to_judge(sent, read):
    assert ServiceParameters([("a2a-version", sent)])["A2A-Version"] == read


def test_request_params_are_the_json_rpc_params():
    request = pause_pb2.AwaitTaskResumptionRequest(task_id="t", reason="")
    request.conditions.update({"timeout": {"durationMinutes": 30, "onTimeout": "fail"}})
    params = protojson.params_of(request)
    assert params == {
        "taskId": "t",
        "reason": "",  # optional: sent empty is not the same as not sent
        "conditions": {"timeout": {"durationMinutes": 30, "onTimeout": "fail"}},
    }
    assert type(params["conditions"]["timeout"]["durationMinutes"]) is int
    resume = protojson.params_of(
        pause_pb2.ResumeTaskRequest(task_id="t", continue_transcript=False)
    )
    assert resume == {"taskId": "t", "continueTranscript": False}


def test_a_paused_state_filter_is_named():
    request = pb.ListTasksRequest(status=pause_pb2.TASK_STATE_PAUSED_BY_AGENT)
    assert protojson.params_of(request) == {"status": "TASK_STATE_PAUSED_BY_AGENT"}


def test_a_struct_without_a_json_form_is_invalid_params():
    request = pb.CancelTaskRequest(id="t")
    request.metadata.update({"x": float("nan")})
    with pytest.raises(ProtocolError) as caught:
        protojson.params_of(request)
    assert caught.value.code == INVALID_PARAMS


def test_paused_states_travel_as_the_extension_numbers():
    paused = {"id": "t", "status": {"state": "TASK_STATE_PAUSED_BY_CLIENT"}}
    task = protojson.message_of(paused, pb.Task)
    assert task.status.state == pause_pb2.TASK_STATE_PAUSED_BY_CLIENT == 101
    update = {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_PAUSED_BY_AGENT"}}}
    event = protojson.message_of(update, pb.StreamResponse)
    assert event.status_update.status.state == pause_pb2.TASK_STATE_PAUSED_BY_AGENT
    listed = protojson.message_of({"tasks": [paused], "unknownKey": 1}, pb.ListTasksResponse)
    assert listed.tasks[0].status.state == 101
    # the state in a status update's metadata is data, not the enum: left as it is
    meta = {"statusUpdate": {"metadata": {"state": "TASK_STATE_PAUSED_BY_AGENT"}}}
    kept = protojson.message_of(meta, pb.StreamResponse)
    assert kept.status_update.metadata["state"] == "TASK_STATE_PAUSED_BY_AGENT"


def test_a_null_result_is_empty():
    assert protojson.message_of(None, empty_pb2.Empty) == empty_pb2.Empty()


def test_an_error_becomes_a_status_with_its_details():
    error = ProtocolError(TASK_NOT_FOUND, "task 'x' not found", {"taskId": "x"})
    status = status_of(error)
    assert status.code == grpc.StatusCode.NOT_FOUND and status.details == "task 'x' not found"
    (key, raw), *_ = status.trailing_metadata
    assert key == "grpc-status-details-bin"
    body = status_pb2.Status.FromString(raw)
    info = error_details_pb2.ErrorInfo()
    assert body.details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)["taskId"]) == ("TASK_NOT_FOUND", "x")

    bad = status_pb2.Status.FromString(
        status_of(invalid_params({"message.parts": ["required"]})).trailing_metadata[0][1]
    )
    request = error_details_pb2.BadRequest()
    assert bad.details[1].Unpack(request)
    assert request.field_violations[0].field == "message.parts"
