"""Who is calling: a bearer API key (or, if the settings allow it, an anonymous caller).
Shared by the JSON-RPC endpoint and the REST endpoints (as a DRF authentication class)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from a2a import api_keys, conf
from a2a.models import ApiKey
from a2a.services import Actor


@dataclass(frozen=True)
class Principal:
    actor: Actor
    scopes: frozenset[str]
    is_authenticated = True  # so DRF treats it as a signed-in caller


class Unauthenticated(Exception):
    pass


def authenticate(authorization: str | None) -> Principal:
    """The caller behind an `Authorization` header. A bad or revoked token is refused even
    where anonymous calls are allowed: a client that sends a key expects it to count."""
    if not authorization:
        anonymous = conf.TASKDECK.anonymous_scopes
        if anonymous:  # all anonymous callers are one tenant
            return principal_of("anonymous", "-", "anonymous", anonymous)
        raise Unauthenticated("an API key is required: send `Authorization: Bearer <key>`")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("use `Authorization: Bearer <key>`")
    key = api_keys.verify(token.strip())
    if key is None:
        raise Unauthenticated("unknown or revoked API key")
    return key_principal(key)


def principal_of(kind: str, name: str, owner: str, scopes) -> Principal:
    """A caller of tenant `owner`; restricted to it unless it has the operator scope."""
    scopes = frozenset(scopes)
    tenant = f"key:{owner}" if kind == "apikey" else owner
    actor = Actor(kind, name, tenant=tenant, restricted="operator" not in scopes)
    return Principal(actor, scopes)


def key_principal(key) -> Principal:
    return principal_of("apikey", key.name, key.owner or key.name, key.scopes)


def user_actor(user) -> Actor:
    """A signed-in dashboard user: owns what they start (`user:<name>`), sees everything
    (viewers read, operators act; the roles decide which)."""
    return Actor("operator", user.get_username(), tenant=f"user:{user.get_username()}")


def still_valid(actor: Actor, session_key: str | None = None) -> bool:
    """May the caller behind `actor` still use what it opened (a stream, a run, a socket,
    an ACP session)? An API key that was revoked or deleted may not; nor may a dashboard
    user whose session (`session_key`, the one the run or socket was opened with) has
    ended — signed out or expired (issue 32: a signed-out session's AG-UI run streamed
    on). One small read, made only at the caller's revalidation cadence."""
    if session_key is not None:
        return session_alive(session_key)
    if actor.kind != "apikey":
        return True
    return ApiKey.objects.filter(name=actor.name, revoked_at__isnull=True).exists()


def session_alive(session_key: str) -> bool:
    """Is this session still signed in? Not after a sign-out (deleted) or its idle expiry
    (the store loads nothing for an expired session)."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    return "_auth_user_id" in store.load()


def revalidate_seconds() -> float:
    return conf.TASKDECK.revalidate_seconds


class ApiKeyAuthentication(BaseAuthentication):
    """DRF authentication by the same bearer keys, for Taskdeck's REST endpoints."""

    def authenticate(self, request):
        header = request.headers.get("Authorization")
        if not header:
            return None  # let other authenticators (session) try
        try:
            principal = authenticate(header)
        except Unauthenticated as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return (principal, principal)

    def authenticate_header(self, request):
        return 'Bearer realm="taskdeck"'
