"""API keys: shown once, stored as a digest, scoped, revocable."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from a2a import api_keys
from a2a.models import ApiKey

pytestmark = pytest.mark.django_db


def test_only_a_digest_is_stored():
    key, token = api_keys.create_key("ci", ["read"])
    stored = ApiKey.objects.get(pk=key.pk)
    assert token not in (stored.digest, stored.prefix, stored.name)
    assert stored.digest == hashlib.sha256(token.encode()).hexdigest()
    assert api_keys.verify(token) == stored


@pytest.mark.parametrize(
    "token",
    ["", "td_", "td_abc", "bearer", "td_00000000_wrong-secret", "xx_abc_def"],
)
def test_garbage_tokens_verify_to_nothing(token):
    api_keys.create_key("ci", ["read"])
    assert api_keys.verify(token) is None


def test_a_tampered_secret_with_a_real_prefix_is_refused():
    _, token = api_keys.create_key("ci", ["read"])
    assert api_keys.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None


def test_revoked_keys_stop_working():
    _, token = api_keys.create_key("ci", ["read"])
    assert api_keys.revoke("ci") is True
    assert api_keys.verify(token) is None
    assert api_keys.revoke("ci") is False


@pytest.mark.parametrize("scopes", [[], ["admin"], ["read", "root"]])
def test_scopes_must_be_known(scopes):
    with pytest.raises(ValueError, match="scopes"):
        api_keys.create_key("ci", scopes)
    assert not ApiKey.objects.exists()


def test_command_prints_the_token_once_and_refuses_duplicates():
    out = StringIO()
    call_command("create_api_key", "ops", "--scopes", "read,write", stdout=out)
    token = out.getvalue().strip()
    assert api_keys.verify(token).scopes == ["read", "write"]
    with pytest.raises(CommandError, match="exists"):
        call_command("create_api_key", "ops", stdout=StringIO())
    call_command("create_api_key", "ops", "--if-missing", stdout=(quiet := StringIO()))
    assert quiet.getvalue() == ""
    with pytest.raises(CommandError, match="scopes"):
        call_command("create_api_key", "x", "--scopes", "read,sudo", stdout=StringIO())
    call_command("create_api_key", "ops", "--revoke", stdout=StringIO())
    assert api_keys.verify(token) is None
