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
