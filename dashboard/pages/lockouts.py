"""Sign-in lockouts (django-axes, dashboard/auth_backends.py): what is locked out now, and
an operator's release of one, audited with who and why (docs/dashboard.md). A release
forgets that pair's (or address's) failed attempts, as `manage.py axes_reset_username`
would, without a shell."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from dashboard import actions, auth_backends, forms
from dashboard.pages.access import operator_only

ACTION = "release-sign-in"


def _page(request: HttpRequest, form: forms.ReleaseLockoutForm | None = None, status=200):
    return render(
        request,
        "dashboard/lockouts.html",
        {
            "page": "lockouts",
            "lockouts": auth_backends.lockouts(),
            "pair_limit": settings.AXES_FAILURE_LIMIT,
            "address_limit": auth_backends.address_limit(),
            "cooloff_minutes": f"{settings.AXES_COOLOFF_TIME.total_seconds() / 60:g}",
            "form": form,
        },
        status=status,
    )


@login_required
@require_GET
def lockouts(request: HttpRequest) -> HttpResponse:
    """Viewers see the list; operators also get a release form on each row."""
    return _page(request)


@operator_only(ACTION)
def release(request: HttpRequest) -> HttpResponse:
    form = forms.ReleaseLockoutForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {', '.join(v)}" for k, v in form.errors.items())
        actions.refuse(request.user, ACTION, "", errors, reason=request.POST.get("reason", ""))
        return _page(request, form, status=400)
    name = form.cleaned_data["username"] or None
    address = form.cleaned_data["ip_address"]
    which = f"{name!r} from {address}" if name else f"every name from {address}"
    deleted = auth_backends.release(name, address)
    if not deleted:
        message = f"Nothing to release: no failed sign-ins of {which}."
        actions.refuse(request.user, ACTION, "", message, reason=form.cleaned_data["reason"])
        messages.error(request, message)
        return redirect("lockouts")
    done = f"Released sign-ins of {which} ({deleted} attempt records forgotten)."
    actions.audit(
        request.user, ACTION, "", reason=form.cleaned_data["reason"], ok=True, detail=done
    )
    messages.success(request, done)
    return redirect("lockouts")
