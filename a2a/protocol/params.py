"""Params of every JSON-RPC method, validated by DRF serializers.

Standard A2A methods are lenient about keys they don't know (clients send extras); the
pause extension's methods refuse unknown keys, as Harn's validator does.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from a2a.fields import (
    AnyJSONField,
    ObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from a2a.lifecycle import State
from a2a.models import Suspension

ID_LENGTH = 128


def _id_field(**kw) -> StrictCharField:
    return StrictCharField(max_length=ID_LENGTH, allow_blank=False, **kw)


class PartField(serializers.Field):
    """One message part in A2A 0.3 form: text, data or file, named by its `kind`, which
    0.3 requires (the 0.3 kit refuses a part without it). A2A 1.0 parts carry no kind:
    1.0 calls reach here through `wire10.params_to_03`, which names it from the shape."""

    default_error_messages = {"invalid": "must be an object"}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.fail("invalid")
        kind = data.get("kind")
        if kind is None:
            raise serializers.ValidationError({"kind": ['is required: "text", "data" or "file"']})
        meta = data.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise serializers.ValidationError({"metadata": ["must be an object"]})
        out: dict[str, Any] = {"kind": kind}
        if kind == "text":
            if not isinstance(data.get("text"), str):
                raise serializers.ValidationError({"text": ["must be a string"]})
            out["text"] = data["text"]
        elif kind == "data":
            if not isinstance(data.get("data"), dict):
                raise serializers.ValidationError({"data": ["must be an object"]})
            out["data"] = data["data"]
        elif kind == "file":
            f = data.get("file")
            if not isinstance(f, dict) or not (
                isinstance(f.get("bytes"), str) or isinstance(f.get("uri"), str)
            ):
                raise serializers.ValidationError(
                    {"file": ["must be an object with a string `bytes` or `uri`"]}
                )
            out["file"] = {k: v for k, v in f.items() if k in {"bytes", "uri", "name", "mimeType"}}
        else:
            raise serializers.ValidationError({"kind": ['must be "text", "data" or "file"']})
        if kind != "file" and data.get("mediaType") is not None:
            # A2A 1.0 lets any part say its media type; the skill's inputModes judge it
            # (a2a.services.checks.content_types)
            if not isinstance(data["mediaType"], str):
                raise serializers.ValidationError({"mediaType": ["must be a string"]})
            out["mediaType"] = data["mediaType"]
        if meta:
            out["metadata"] = meta
        return out

    def to_representation(self, value):
        return value


class MessageSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["message"], required=False)
    messageId = _id_field()
    role = serializers.ChoiceField(
        choices=["user"], error_messages={"invalid_choice": 'must be "user"'}
    )
    parts = serializers.ListField(child=PartField(), min_length=1, max_length=100)
    taskId = _id_field(required=False)
    contextId = _id_field(required=False)
    metadata = ObjectField(required=False, default=dict)
    referenceTaskIds = serializers.ListField(child=_id_field(), required=False, default=list)
    extensions = serializers.ListField(child=StrictCharField(), required=False)


class SendConfigurationSerializer(serializers.Serializer):
    acceptedOutputModes = serializers.ListField(child=StrictCharField(), required=False)
    historyLength = StrictIntegerField(min_value=0, required=False)
    blocking = StrictBooleanField(required=False)  # 0.3: wait for the agent to settle
    returnImmediately = StrictBooleanField(required=False)  # 1.0: don't wait
    pushNotificationConfig = ObjectField(required=False)  # 0.3 inline push config
    taskPushNotificationConfig = ObjectField(required=False)  # 1.0 inline push config


class MessageSendParams(serializers.Serializer):
    message = MessageSerializer()
    configuration = SendConfigurationSerializer(required=False)
    metadata = ObjectField(required=False, default=dict)


class TaskRefMixin(serializers.Serializer):
    """The task id under any of its three names: `id`, `taskId` (RFC) or `task_id` (Bindu).
    Two names with different values are refused."""

    id = _id_field(required=False)
    taskId = _id_field(required=False)
    task_id = _id_field(required=False)
    primary_name = "taskId"  # the name a missing-id error uses

    def validate(self, attrs):
        given = {k: attrs[k] for k in ("id", "taskId", "task_id") if k in attrs}
        if not given:
            raise serializers.ValidationError({self.primary_name: ["this field is required"]})
        if len(set(given.values())) > 1:
            raise serializers.ValidationError(
                {k: ["names a different task than " + ", ".join(given)] for k in given}
            )
        attrs["task"] = next(iter(given.values()))
        return attrs


class TaskQueryParams(TaskRefMixin):
    primary_name = "id"
    historyLength = StrictIntegerField(min_value=0, required=False)
    metadata = ObjectField(required=False)


class TaskIdParams(TaskRefMixin):
    primary_name = "id"
    metadata = ObjectField(required=False)
    reason = StrictCharField(required=False, allow_blank=True)


class EmptyParams(serializers.Serializer):
    """Methods without parameters (unknown keys are ignored, as ProtoJSON does)."""


class TaskListParams(serializers.Serializer):
    contextId = _id_field(required=False)
    state = serializers.ChoiceField(choices=[s.value for s in State], required=False)
    status = serializers.ChoiceField(choices=[s.value for s in State], required=False)
    pageSize = StrictIntegerField(min_value=1, max_value=100, required=False, default=50)
    pageToken = StrictCharField(required=False, allow_blank=True, max_length=512, default="")
    historyLength = StrictIntegerField(min_value=0, required=False, default=0)
    includeArtifacts = StrictBooleanField(required=False, default=False)
    lastUpdatedAfter = serializers.DateTimeField(required=False)
    metadata = ObjectField(required=False)


# The pause extension's params: shapes only. What a reason, a mode or conditions may hold
# is checked by a2a.services (errors under the same names: reason, mode, resumeWhen.…).


class PauseParams(StrictSerializer, TaskRefMixin):
    reason = StrictCharField(required=False, allow_blank=True, default="")
    mode = StrictCharField(required=False, default=Suspension.Mode.FINISH_STEP)
    resumeWhen = AnyJSONField(required=False, default=None)
    metadata = ObjectField(required=False, default=dict)


class AwaitResumptionParams(StrictSerializer, TaskRefMixin):
    reason = StrictCharField(allow_blank=True)
    conditions = AnyJSONField(required=False, default=None)
    summary = StrictCharField(required=False, allow_blank=True, default="")
    metadata = ObjectField(required=False, default=dict)


class ResumeParams(StrictSerializer, TaskRefMixin):
    handle = StrictCharField(required=False, allow_null=True)
    input = AnyJSONField(required=False, default=None)
    continueTranscript = StrictBooleanField(required=False, default=True)
    metadata = ObjectField(required=False, default=dict)


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"message.parts.0.text": ["must be a string"]}."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            key = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{key}" if prefix and key else (prefix or key)
            out.update(flatten_errors(value, path))
    elif isinstance(detail, list) and detail and all(isinstance(d, str) for d in detail):
        out.setdefault(prefix, []).extend(str(d) for d in detail)
    elif isinstance(detail, list):
        for i, value in enumerate(detail):
            if value:
                out.update(flatten_errors(value, f"{prefix}.{i}" if prefix else str(i)))
    else:
        out.setdefault(prefix, []).append(str(detail))
    return out
