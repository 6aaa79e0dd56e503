"""Who may look and who may act: the sign-in page, the guard every changing view wears,
and where a form may send the operator back to."""

from __future__ import annotations

import functools

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from dashboard import actions
from dashboard.roles import can_operate


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


def operator_only(action: str):
    """POST views that change something: signed in, holding a2a.operate_task. A refusal
    (a viewer's forged POST) is audited and answered 403; nothing else runs."""

    def wrap(view):
        @functools.wraps(view)
        @login_required
        @require_POST
        def inner(request: HttpRequest, *args, **kwargs):
            if not can_operate(request.user):
                target = kwargs.get("task_id") or kwargs.get("interrupt_id") or ""
                actions.refuse(request.user, action, target, "not permitted: viewers cannot act")
                raise PermissionDenied("Viewers can look but not act.")
            return view(request, *args, **kwargs)

        return inner

    return wrap


def safe_next(request, url: str) -> str:
    """`url` when it stays on this site, else the inbox (no open redirects)."""
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return url
    return reverse("inbox")
