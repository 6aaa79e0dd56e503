"""POST /api/events {name, payload}: how CI systems, schedulers and operators wake tasks
parked on an event (`conditions.onEvent` / `conditions.trigger`)."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from a2a import services
from a2a.auth import ApiKeyAuthentication, Principal, has_scope
from a2a.jsonrpc.fields import ObjectField, StrictCharField


class EventSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200)
    payload = ObjectField(required=False, default=dict)

    def validate_name(self, value: str) -> str:
        if not value.strip() or any(ch.isspace() for ch in value):
            raise serializers.ValidationError("must be non-empty and contain no spaces")
        return value


class EventsView(APIView):
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = [has_scope("write")]

    def post(self, request):
        serializer = EventSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if isinstance(request.auth, Principal):
            actor = request.auth.actor
        else:
            actor = services.Actor("operator", request.user.get_username())
        event = services.emit_event(
            serializer.validated_data["name"], serializer.validated_data["payload"], actor=actor
        )
        return Response(
            {"id": event.pk, "name": event.name, "woke": event.woke},
            status=status.HTTP_201_CREATED,
        )
