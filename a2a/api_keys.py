"""Bearer API keys: creation, verification, revocation.

A token looks like `td_<prefix>_<secret>`. The prefix finds the row; only a SHA-256 digest
of the whole token is stored (the token has 190+ bits of entropy, so a slow password hash
would buy nothing) and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.utils import timezone

from a2a.models import ApiKey

SCOPES = tuple(ApiKey.Scope.values)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_key(name: str, scopes: list[str], owner: str = "") -> tuple[ApiKey, str]:
    """A new key and its token; the token is not stored and cannot be shown again. Keys
    with the same `owner` (default: the key's name) share their tasks."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValueError(f"scopes must be a non-empty subset of {', '.join(SCOPES)}")
    prefix = secrets.token_hex(4)
    token = f"td_{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(
        name=name, prefix=prefix, digest=_digest(token), scopes=sorted(set(scopes)), owner=owner
    )
    return key, token


def verify(token: str) -> ApiKey | None:
    """The live key `token` belongs to, or None."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "td" or not parts[1]:
        return None
    key = ApiKey.objects.filter(prefix=parts[1], revoked_at__isnull=True).first()
    if key is None or not hmac.compare_digest(key.digest, _digest(token)):
        return None
    now = timezone.now()
    if key.last_used_at is None or key.last_used_at < now - timedelta(minutes=1):
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)  # at most once a minute
    return key


def revoke(name: str) -> bool:
    return bool(
        ApiKey.objects.filter(name=name, revoked_at__isnull=True).update(revoked_at=timezone.now())
    )
