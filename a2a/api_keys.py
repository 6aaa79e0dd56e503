"""Bearer API keys: creation, verification, revocation.

A token looks like `td_<prefix>_<secret>`. The prefix finds the row; only a SHA-256 digest
of the whole token is stored (the token has 190+ bits of entropy, so a slow password hash
would buy nothing) and compared in constant time.

Verified keys are remembered per process for TASKDECK_REVALIDATE_SECONDS (5 s): a call in
a loop costs no query for its key. That is the bound already stated for revocation (open
streams, runs and sockets re-check that often), and it now holds for new calls too: a key
revoked or deleted in another process stops working within it; in this process at once
(saving or deleting an ApiKey forgets every remembered key).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from datetime import timedelta

from django.utils import timezone

from a2a import conf
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


# digest of a token -> (monotonic time it must be checked again, its key)
_remembered: dict[str, tuple[float, ApiKey]] = {}
_remembered_lock = threading.Lock()
REMEMBER_AT_MOST = 10_000  # distinct tokens per process; past it, start afresh


def remember_seconds() -> float:
    return conf.TASKDECK.revalidate_seconds


def forget_all(**_signal_kwargs: object) -> None:
    """Drop every remembered key (an ApiKey was saved or deleted in this process)."""
    with _remembered_lock:
        _remembered.clear()


def verify(token: str) -> ApiKey | None:
    """The live key `token` belongs to, or None (see the module docstring for how long a
    verified key is remembered)."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "td" or not parts[1]:
        return None
    digest = _digest(token)
    hit = _remembered.get(digest)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    key = ApiKey.objects.filter(prefix=parts[1], revoked_at__isnull=True).first()
    if key is None or not hmac.compare_digest(key.digest, digest):
        return None
    if (ttl := remember_seconds()) > 0:
        with _remembered_lock:
            if len(_remembered) >= REMEMBER_AT_MOST:
                _remembered.clear()
            _remembered[digest] = (time.monotonic() + ttl, key)
    now = timezone.now()
    if key.last_used_at is None or key.last_used_at < now - timedelta(minutes=1):
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)  # at most once a minute
    return key


def revoke(name: str) -> bool:
    revoked = ApiKey.objects.filter(name=name, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    forget_all()  # an update() sends no post_save
    return bool(revoked)
