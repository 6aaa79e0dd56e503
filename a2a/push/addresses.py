"""Where a webhook may point.

Taskdeck POSTs to URLs its clients choose, so a webhook could aim it at the machine's own
services or the private network (SSRF). Unless TASKDECK_PUSH_ALLOW_PRIVATE=1 (tests, local
conformance runs), loopback, private, link-local, multicast and other non-public addresses
are refused: literal addresses when the config is created (names are not resolved then:
they may not resolve offline, and their answers change), and every resolved address just
before each delivery, whose connection then goes to the address that was checked.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from a2a import conf

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048
# Not "private" to Python, but not the public internet either.
_EXTRA_BLOCKED = (
    ipaddress.ip_network("100.64.0.0/10"),  # shared address space (carrier-grade NAT)
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64
    ipaddress.ip_network("192.0.0.0/24"),  # IETF protocol assignments
    ipaddress.ip_network("fec0::/10"),  # deprecated site-local
)
REFUSED = (
    "points at a loopback, private, link-local or multicast address, which this server "
    "does not call"
)


class AddressRefused(Exception):
    """A webhook resolved to an address that is not allowed."""


def allow_private() -> bool:
    return conf.PUSH.allow_private


def blocked(ip: IPAddress) -> bool:
    """True for addresses a webhook may not reach unless private addresses are allowed."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None and blocked(embedded):
            return True
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_unspecified
        or ip.is_reserved
        or any(ip in net for net in _EXTRA_BLOCKED)
    )


def literal_ip(host: str) -> IPAddress | None:
    """The address `host` spells, without asking DNS. Besides the usual forms this knows
    the legacy IPv4 spellings resolvers accept (`127.1`, `2130706433`, `0x7f.0.0.1`)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def check_url(url: str) -> str:
    """The webhook URL if it is acceptable, else ValueError with a sentence saying why."""
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"must be at most {MAX_URL_LENGTH} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")
    host = parts.hostname
    if not host:
        raise ValueError("must name a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials; use `authentication` or `token`")
    if port == 0:
        raise ValueError("is not a valid URL")
    if not host.isascii():
        # Sent as given, a non-ASCII name cannot go into a Host header or SNI; the client
        # knows which IDNA form its name has, so it says it.
        raise ValueError("must spell an internationalised host name in its xn-- (IDNA) form")
    if not allow_private():
        name = host.rstrip(".")  # "localhost." and "127.0.0.1." resolve like the plain names
        ip = literal_ip(name)
        if (ip is not None and blocked(ip)) or name == "localhost" or name.endswith(".localhost"):
            raise ValueError(REFUSED)
    return url


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (OSError when it does not resolve)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[IPAddress] = []
    for *_, sockaddr in infos:
        ip = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if ip not in seen:
            seen.append(ip)
    return seen


def checked_address(host: str, port: int) -> IPAddress:
    """The address to connect to for `host`, after checking all of them (AddressRefused
    when any is not allowed: a name with one private answer is not trusted)."""
    addresses = resolve(host, port)
    if not addresses:
        raise OSError(f"{host} has no address")
    if not allow_private() and any(blocked(ip) for ip in addresses):
        raise AddressRefused(REFUSED)
    return addresses[0]
