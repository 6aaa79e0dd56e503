"""DRF fields that respect JSON types: "5" is not an integer, 1 is not a boolean,
123 is not a string. DRF's own fields coerce, which would let wrong types through."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from a2a.validation import is_int


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "must be a string"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "must be an integer"}

    def to_internal_value(self, data: Any) -> int:
        if not is_int(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "must be true or false"}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class ObjectField(serializers.JSONField):
    """A JSON object (dict), nothing else."""

    default_error_messages = {"invalid": "must be an object"}

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            self.fail("invalid")
        return data


class AnyJSONField(serializers.JSONField):
    """Any JSON value, null included."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not declare, naming each one."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({k: ["unknown field"] for k in unknown})
        return super().to_internal_value(data)


def unbind(field: serializers.Field) -> None:
    """Break the reference cycles DRF makes in a serializer once it is done with: every
    bound field points back at its parent (`parent`, a ListField's `child` too), and the
    serializer's fields at the serializer (`BindingDict.serializer`). Left alone, each
    call's serializer tree (dozens of fields, validators and messages) outlives the call
    until the cyclic collector finds it; at a few hundred calls a second that garbage was
    most of what each full collection walked, 50-80 ms a time with no request or socket
    served meanwhile (docs/production.md, "Garbage and the tail"). Unbound, the tree is
    freed by its reference counts when the call drops the serializer. Only for a
    serializer whose validated data or errors were already taken."""
    fields = field.__dict__.pop("fields", None)  # the cached BindingDict, if ever built
    if fields is not None:
        fields.serializer = None
        for child in fields.values():
            unbind(child)
    child = field.__dict__.get("child")
    if isinstance(child, serializers.Field):
        unbind(child)
    field.__dict__.pop("parent", None)
