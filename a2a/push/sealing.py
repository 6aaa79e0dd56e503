"""Webhook secrets at rest: sealed with Fernet (the `cryptography` package's authenticated
symmetric encryption: AES-128-CBC + HMAC-SHA256), so a database dump or backup does not
hold clients' webhook tokens and credentials.

Keys: TASKDECK_PUSH_SECRET_KEYS, comma-separated Fernet keys (make one with
`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`);
the first seals, all unseal (rotation: put the new key first, run `manage.py
reseal_push_secrets`, then drop the old one). Without it a key is derived from
DJANGO_SECRET_KEY (HKDF-SHA256) — fine for development; in production set a dedicated key,
or rotating the secret key would make stored webhook secrets unreadable.
"""

from __future__ import annotations

import base64
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from a2a import conf

PREFIX = "fernet:"  # a sealed value; anything else is a value stored before sealing


@cache
def _fernet() -> MultiFernet:
    keys = [Fernet(k.encode()) for k in conf.PROCESS.push_secret_keys]
    if not keys:
        derived = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"taskdeck push secrets"
        ).derive(settings.SECRET_KEY.encode())
        keys = [Fernet(base64.urlsafe_b64encode(derived))]
    return MultiFernet(keys)


def seal(value: str) -> str:
    if not value:
        return ""
    return PREFIX + _fernet().encrypt(value.encode()).decode()


def unseal(value: str) -> str:
    """The secret; a value stored before sealing is returned as it is."""
    if not value.startswith(PREFIX):
        return value
    try:
        return _fernet().decrypt(value[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        raise ValueError(
            "a webhook secret cannot be unsealed: TASKDECK_PUSH_SECRET_KEYS (or the "
            "DJANGO_SECRET_KEY it was derived from) changed"
        ) from None


def reseal(value: str) -> str:
    """Sealed with the current first key (rotation)."""
    return seal(unseal(value)) if value else ""
