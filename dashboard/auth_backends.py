"""Sign-in throttling (django-axes): the backend in front of Django's ModelBackend
(settings.AUTHENTICATION_BACKENDS) and the page a locked-out attempt gets."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render


class LoginThrottle(AxesStandaloneBackend):
    """Refuses sign-ins from a locked-out account or address (django-axes; it only
    refuses: ModelBackend, after it, signs in). Calls without a request are not
    throttled (axes would raise instead)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


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
