"""POST /api/events {name, payload}: how CI systems, schedulers and operators wake tasks
parked on an event (`conditions.onEvent` / `conditions.trigger`)."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from a2a import jsonsafe, services
from a2a.auth import ApiKeyAuthentication, Principal, user_actor
from a2a.errors import ValidationFailed
from a2a.fields import ObjectField, StrictCharField


class StorableJSONParser(JSONParser):
    """DRF's JSON parser, but 1e400 and NaN are parse errors and deep nesting is a 400
    rather than a RecursionError (a 500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            return jsonsafe.loads(stream.read().decode(encoding))
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


class EventSerializer(serializers.Serializer):
    """The wire shape only; what a name or payload may hold is the service's rule."""

    name = StrictCharField(max_length=200)
    payload = ObjectField(required=False, default=dict)


# The dashboard's operator role (dashboard/roles.py); the permission is this app's own.
OPERATE = "a2a.operate_task"


class CanEmitEvents(BasePermission):
    """An API key with the `write` scope, or a signed-in user who may operate tasks (the
    operators group, or a superuser). Staff status alone is not a role here: a viewer
    with admin access still only watches."""

    message = "needs an API key with the 'write' scope"

    def has_permission(self, request, view) -> bool:
        if isinstance(request.auth, Principal):
            return "write" in request.auth.scopes
        user = getattr(request, "user", None)
        if not (user and user.is_authenticated):
            return False  # DRF answers 401 with the key's WWW-Authenticate
        self.message = "needs the operator role (permission a2a.operate_task)"
        return user.has_perm(OPERATE)


class EventsView(APIView):
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    parser_classes = [StorableJSONParser]
    permission_classes = [CanEmitEvents]

    def post(self, request):
        serializer = EventSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if isinstance(request.auth, Principal):
            actor = request.auth.actor
        else:
            actor = user_actor(request.user)
        try:
            event = services.emit_event(
                serializer.validated_data["name"], serializer.validated_data["payload"], actor=actor
            )
        except ValidationFailed as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            {"id": event.pk, "name": event.name, "woke": event.woke},
            status=status.HTTP_201_CREATED,
        )
