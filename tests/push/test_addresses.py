"""Which webhook URLs are accepted: pure checks, no database, no DNS."""

from __future__ import annotations

import ipaddress

import pytest

from a2a.push import addresses

PRIVATE = [
    "http://127.0.0.1/hook",
    "http://127.1/hook",  # legacy spellings resolvers accept
    "http://2130706433/hook",
    "http://0x7f000001/hook",
    "http://0177.0.0.1/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1:8080/hook",
    "http://169.254.169.254/latest/meta-data",  # cloud metadata
    "http://100.64.0.1/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://255.255.255.255/hook",
    "http://[::1]/hook",
    "http://[::]/hook",
    "http://[fe80::1]/hook",
    "http://[fc00::1]/hook",
    "http://[ff02::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://[2002:7f00:1::]/hook",  # 6to4 around 127.0.0.1
    "http://localhost:8000/hook",
    "http://LOCALHOST/hook",
    "http://api.localhost/hook",
    "http://localhost./hook",  # a trailing dot resolves the same
    "http://127.0.0.1./hook",
    "http://[fec0::1]/hook",  # deprecated site-local
    "http://192.0.0.8/hook",  # IETF protocol assignments
]
PUBLIC = [
    "https://example.com/webhook",  # names are not resolved when a config is made
    "https://example.com/tck-push-webhook?x=1",
    "http://93.184.216.34/hook",
    "https://8.8.8.8:8443/hook",
    "https://[2606:4700:4700::1111]/hook",
    "HTTPS://Example.COM/Hook",
]
INVALID = [
    ("ftp://example.com/hook", "http"),
    ("example.com/hook", "http"),
    ("javascript:alert(1)", "http"),
    ("http://", "host"),
    ("http:///path", "host"),
    ("http://user:secret@example.com/hook", "credentials"),
    ("https://example.com:99999/hook", "valid"),
    ("https://example.com:0/hook", "valid"),
    ("http://exa mple.com/hook", "spaces"),
    ("http://example.com/\nhook", "spaces"),
    ("https://example.com/" + "x" * 2100, "2048"),
    ("https://bücher.example/hook", "xn--"),
    ("http://①②⑦.0.0.1/hook", "xn--"),
]


@pytest.mark.parametrize("url", PRIVATE)
def test_private_addresses_are_refused_unless_allowed(url, forbid_private, settings):
    with pytest.raises(ValueError, match="loopback, private"):
        addresses.check_url(url)
    settings.TASKDECK["PUSH"]["ALLOW_PRIVATE"] = True
    assert addresses.check_url(url) == url


@pytest.mark.parametrize("url", PUBLIC)
def test_public_addresses_and_names_are_accepted(url, forbid_private):
    assert addresses.check_url(url) == url


@pytest.mark.parametrize("url,why", INVALID)
def test_malformed_urls_are_refused_even_when_private_is_allowed(url, why, allow_private):
    with pytest.raises(ValueError, match=why):
        addresses.check_url(url)


def test_resolved_addresses_are_checked_at_delivery_time(forbid_private, settings):
    """`localhost` resolves offline: every answer is checked, and one private answer is
    enough to refuse the name."""
    with pytest.raises(addresses.AddressRefused):
        addresses.checked_address("localhost", 80)
    settings.TASKDECK["PUSH"]["ALLOW_PRIVATE"] = True
    assert addresses.checked_address("localhost", 80).is_loopback


@pytest.mark.parametrize(
    "ip,blocked",
    [
        ("8.8.8.8", False),
        ("2606:4700:4700::1111", False),
        ("127.0.0.53", True),
        ("::ffff:192.168.0.1", True),
        ("64:ff9b:1::a", True),
        ("198.18.0.1", True),  # benchmarking range (private to Python)
    ],
)
def test_blocked_ranges(ip, blocked):
    assert addresses.blocked(ipaddress.ip_address(ip)) is blocked
