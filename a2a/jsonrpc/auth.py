"""Who is calling: a bearer API key (or, if the settings allow it, an anonymous caller)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from a2a import api_keys
from a2a.services import Actor


@dataclass(frozen=True)
class Principal:
    actor: Actor
    scopes: frozenset[str]


class Unauthenticated(Exception):
    pass


def authenticate(authorization: str | None) -> Principal:
    """The caller behind an `Authorization` header. A bad or revoked token is refused even
    where anonymous calls are allowed: a client that sends a key expects it to count."""
    if not authorization:
        anonymous = settings.TASKDECK.get("ANONYMOUS_SCOPES") or []
        if anonymous:
            return Principal(Actor("anonymous", "-"), frozenset(anonymous))
        raise Unauthenticated("an API key is required: send `Authorization: Bearer <key>`")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("use `Authorization: Bearer <key>`")
    key = api_keys.verify(token.strip())
    if key is None:
        raise Unauthenticated("unknown or revoked API key")
    return Principal(Actor("apikey", key.name), frozenset(key.scopes))
