"""Params of the push notification methods, in both wire versions (strict JSON types).

0.3: `tasks/pushNotificationConfig/set {taskId, pushNotificationConfig: {id?, url, token?,
authentication?: {schemes, credentials?}}}`, get/list/delete by `id` (the task).
1.0: flat `{taskId, id?, url, token?, authentication?: {scheme, credentials?}}`; the view
camelizes 1.0 params, `task_id` is accepted here too. Unknown keys are ignored, as for the
other standard methods.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from a2a.fields import AnyJSONField, ObjectField, StrictCharField, StrictIntegerField
from a2a.protocol.params import ID_LENGTH, TaskRefMixin

from . import addresses

SECRET_LENGTH = 4096
SCHEME_LENGTH = 64


def _id(**kw) -> StrictCharField:
    return StrictCharField(max_length=ID_LENGTH, allow_blank=False, **kw)


class WebhookUrlField(StrictCharField):
    def __init__(self, **kw):
        super().__init__(max_length=addresses.MAX_URL_LENGTH, allow_blank=False, **kw)

    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        try:
            return addresses.check_url(url)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class HeaderValueField(StrictCharField):
    """A string sent in an HTTP header: printable ASCII only (no line breaks to smuggle
    headers in); `token_chars` also refuses spaces (an auth scheme is one word)."""

    def __init__(self, *, token_chars: bool = False, **kw):
        self.token_chars = token_chars
        super().__init__(**kw)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        low = 0x21 if self.token_chars else 0x20
        if any(not (low <= ord(c) <= 0x7E) for c in value):
            what = "printable ASCII without spaces" if self.token_chars else "printable ASCII"
            raise serializers.ValidationError(f"must be {what} (it is sent in an HTTP header)")
        return value


def _secret() -> HeaderValueField:
    return HeaderValueField(
        required=False, allow_null=True, allow_blank=True, max_length=SECRET_LENGTH
    )


def _scheme(**kw) -> HeaderValueField:
    return HeaderValueField(token_chars=True, max_length=SCHEME_LENGTH, allow_blank=False, **kw)


class Authentication03(serializers.Serializer):
    """0.3 PushNotificationAuthenticationInfo; a 1.0-style `scheme` is taken too."""

    schemes = serializers.ListField(
        child=_scheme(),
        min_length=1,
        max_length=10,
        required=False,
    )
    scheme = _scheme(required=False)
    credentials = _secret()

    def validate(self, attrs):
        schemes = list(attrs.get("schemes") or [])
        if "scheme" in attrs and attrs["scheme"] not in schemes:
            schemes.insert(0, attrs["scheme"])
        if not schemes:
            raise serializers.ValidationError({"schemes": ["this field is required"]})
        return {"schemes": schemes, "credentials": attrs.get("credentials") or ""}


class Authentication10(serializers.Serializer):
    """1.0 AuthenticationInfo."""

    scheme = _scheme()
    credentials = _secret()

    def validate(self, attrs):
        return {"schemes": [attrs["scheme"]], "credentials": attrs.get("credentials") or ""}


class PushNotificationConfig03(serializers.Serializer):
    id = _id(required=False, allow_null=True)
    url = WebhookUrlField()
    token = _secret()
    authentication = Authentication03(required=False, allow_null=True)


class SetParams03(serializers.Serializer):
    taskId = _id()
    pushNotificationConfig = PushNotificationConfig03()
    metadata = ObjectField(required=False)


class GetParams03(TaskRefMixin):
    primary_name = "id"
    # absent, null, "default" or unknown: the task's first config (what 0.3 clients expect)
    pushNotificationConfigId = AnyJSONField(required=False)
    metadata = ObjectField(required=False)

    def validate_pushNotificationConfigId(self, value):
        if value is not None and not isinstance(value, str):
            raise serializers.ValidationError("must be a string")
        return value


class ListParams03(TaskRefMixin):
    primary_name = "id"
    metadata = ObjectField(required=False)


class DeleteParams03(TaskRefMixin):
    primary_name = "id"
    pushNotificationConfigId = _id()
    metadata = ObjectField(required=False)


class TaskId10Mixin(serializers.Serializer):
    """`taskId` (ProtoJSON also accepts `task_id`); two different values are refused."""

    taskId = _id(required=False)
    task_id = _id(required=False)
    tenant = StrictCharField(required=False, allow_blank=True, max_length=ID_LENGTH)

    def validate(self, attrs):
        given = {k: attrs[k] for k in ("taskId", "task_id") if k in attrs}
        if not given:
            raise serializers.ValidationError({"taskId": ["this field is required"]})
        if len(set(given.values())) > 1:
            raise serializers.ValidationError({"task_id": ["names a different task than taskId"]})
        attrs["task"] = next(iter(given.values()))
        return attrs


class Config10(serializers.Serializer):
    """1.0 TaskPushNotificationConfig without its task (as inline on SendMessage)."""

    id = _id(required=False, allow_null=True)
    url = WebhookUrlField()
    token = _secret()
    authentication = Authentication10(required=False, allow_null=True)


class CreateParams10(TaskId10Mixin, Config10):
    pass


class ConfigRefParams10(TaskId10Mixin):
    id = _id()


class ListParams10(TaskId10Mixin):
    pageSize = StrictIntegerField(min_value=0, required=False)
    pageToken = StrictCharField(required=False, allow_blank=True, max_length=512)


class Inline10(Config10):
    """`configuration.taskPushNotificationConfig` on SendMessage; a `taskId` in it, if any,
    must name the message's task (checked by the caller)."""

    taskId = _id(required=False)
    task_id = _id(required=False)
