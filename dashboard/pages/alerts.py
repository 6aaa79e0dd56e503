"""The alerts page: what was found to need a person, and what became of each delivery
(a2a/alerts; docs/production.md, "Alerts"). Read-only: newest first, 50 a page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from a2a import conf
from a2a.alerts.models import Alert, AlertAttempt, AlertDelivery

PAGE_SIZE = 50


@login_required
@require_GET
def alerts(request: HttpRequest) -> HttpResponse:
    """Three queries a page whatever the history (alerts, their deliveries, their tries:
    a delivery is tried at most MAX_ATTEMPTS times)."""
    rows = Alert.objects.order_by("-created_at", "-id").prefetch_related(
        Prefetch(
            "deliveries",
            queryset=AlertDelivery.objects.order_by("channel").prefetch_related(
                Prefetch("tries", queryset=AlertAttempt.objects.order_by("at", "id"))
            ),
        )
    )
    page = Paginator(rows, PAGE_SIZE, allow_empty_first_page=True).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/alerts.html",
        {
            "page": "audit",
            "alerts": page,
            "channels": {"emails": conf.ALERTS.emails, "webhook": bool(conf.ALERTS.webhook)},
        },
    )
