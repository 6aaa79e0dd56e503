"""API keys: shown once, stored as a digest, scoped, revocable."""

from __future__ import annotations

import hashlib
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

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


def test_a_verified_key_costs_no_query_on_the_next_calls(django_assert_num_queries):
    _, token = api_keys.create_key("loop", ["read"])
    api_keys.verify(token)
    with django_assert_num_queries(0):
        for _ in range(5):
            assert api_keys.verify(token) is not None


def test_a_key_revoked_elsewhere_stops_working_within_the_revalidation_bound():
    """Another process's revocation reaches this one as a plain row change (no signal):
    the remembered key must be dropped within TASKDECK_REVALIDATE_SECONDS."""
    key, token = api_keys.create_key("elsewhere", ["read"])
    assert api_keys.verify(token) is not None
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())  # no post_save
    bound = api_keys.remember_seconds()
    deadline = time.monotonic() + bound + 1.0
    while api_keys.verify(token) is not None:
        assert time.monotonic() < deadline, f"still accepted {bound + 1:.1f} s after revocation"
        time.sleep(0.05)


def test_revoking_or_deleting_here_takes_effect_at_once():
    _, token = api_keys.create_key("here", ["read"])
    other, other_token = api_keys.create_key("there", ["read"])
    assert api_keys.verify(token) and api_keys.verify(other_token)
    api_keys.revoke("here")
    assert api_keys.verify(token) is None
    other.delete()
    assert api_keys.verify(other_token) is None
