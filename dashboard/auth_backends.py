"""Sign-in throttling (django-axes): the backend in front of Django's ModelBackend
(settings.AUTHENTICATION_BACKENDS), the handler that counts failures, the client's address
and the page a locked-out attempt gets.

Why per (name, address) and not per name or per address (issue 32): locking a name from
every address, or an address for every name, lets anyone lock the team out — five wrong
passwords for a made-up name from the office's (or the proxy's) address locked out
everyone behind it. A pair only locks the guesser's own attempts at that name; a higher
bound per address (TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT) still stops one address spraying
many names. The address is the TCP peer unless the peer is a trusted proxy
(TASKDECK_TRUSTED_PROXIES): only then does X-Forwarded-For name the client."""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from datetime import datetime

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class LoginThrottle(AxesStandaloneBackend):
    """Refuses sign-ins from a locked-out pair or address (django-axes; it only
    refuses: ModelBackend, after it, signs in). Calls without a request are not
    throttled (axes would raise instead)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def address_failures(ip_address: str | None, since: datetime) -> int:
    """Failed sign-ins from `ip_address`, for any name, since `since` (indexed by address)."""
    if not ip_address:
        return 0
    found = AccessAttempt.objects.filter(ip_address=ip_address, attempt_time__gte=since)
    return found.aggregate(n=Sum("failures_since_start"))["n"] or 0


class PairAndAddressHandler(AxesDatabaseHandler):
    """AXES_HANDLER: axes counts the (name, address) pair (AXES_LOCKOUT_PARAMETERS) against
    AXES_FAILURE_LIMIT; this adds the address's own, higher bound. Axes compares one count
    with one limit, so an address over its bound reports at least the pair limit."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        pair = super().get_failures(request, credentials)
        since = get_cool_off_threshold(request)
        if address_failures(request.axes_ip_address, since) >= address_limit():
            return max(pair, get_failure_limit(request, credentials))
        return pair


def address_limit() -> int:
    return settings.TASKDECK_LOGIN_ADDRESS_FAILURE_LIMIT


@functools.lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(p, strict=False) for p in proxies)


def _address(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address((text or "").strip())
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the TCP peer (REMOTE_ADDR), unless the peer is one of
    TASKDECK_TRUSTED_PROXIES; then the nearest X-Forwarded-For hop that is not a trusted
    proxy (read from the right: hops to its left were written by the client and prove
    nothing). A header from any other peer is ignored: a client cannot pick its address."""
    peer = request.META.get("REMOTE_ADDR")
    proxies = _networks(tuple(settings.TASKDECK_TRUSTED_PROXIES))
    peer_ip = _address(peer)
    if peer_ip is None or not any(peer_ip in net for net in proxies):
        return peer
    hops = [h for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    for hop in reversed(hops):
        hop_ip = _address(hop)
        if hop_ip is None:  # not an address: what is left of it cannot be trusted either
            break
        if not any(hop_ip in net for net in proxies):
            return str(hop_ip)
    return peer


@dataclass(frozen=True)
class Lockout:
    """A name locked at an address (`username` set), or an address locked for every name."""

    username: str | None
    ip_address: str | None
    failures: int
    last: datetime


def lockouts(limit: int = 100) -> list[Lockout]:
    """What is locked out now, the newest first (at most `limit` of each kind): the pairs
    at AXES_FAILURE_LIMIT and the addresses at their own bound. Reads only the attempts of
    the current cool-off window."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    recent = AccessAttempt.objects.filter(attempt_time__gte=since)
    pairs = (
        recent.values("username", "ip_address")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
        .order_by("-last")[:limit]
    )
    addresses = (
        recent.values("ip_address")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=address_limit())
        .order_by("-last")[:limit]
    )
    found = [Lockout(None, a["ip_address"], a["failures"], a["last"]) for a in addresses]
    found += [Lockout(p["username"], p["ip_address"], p["failures"], p["last"]) for p in pairs]
    return found


def release(username: str | None, ip_address: str | None) -> int:
    """Forget the failed sign-ins of a pair (or, without a name, of every name at the
    address); the number of attempt records deleted."""
    found = AccessAttempt.objects.filter(ip_address=ip_address)
    if username is not None:
        found = found.filter(username=username)
    deleted, _ = found.delete()
    return deleted


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the page a locked-out sign-in gets (429, Retry-After)."""
    cool_off = settings.AXES_COOLOFF_TIME.total_seconds()
    response = render(
        request,
        "registration/locked_out.html",
        {"cooloff_minutes": f"{cool_off / 60:g}", "failure_limit": settings.AXES_FAILURE_LIMIT},
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
    response["Retry-After"] = str(round(cool_off))
    return response
