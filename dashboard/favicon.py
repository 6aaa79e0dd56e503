"""The tab's icon with the number of pending approvals on it (issue 15: notice what waits).

Served by Taskdeck rather than drawn in the page: the CSP allows images from 'self' only
(a data: or blob: icon would need it widened), and there are just eleven icons (none, 1
to 9, "9+"), each cached by the browser for a day. No sign-in needed: an icon with a
number says nothing a signed-out visitor could use."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

BASE = (
    '<rect width="16" height="16" rx="3" fill="#2f5bd3"/>'
    '<rect x="3" y="3" width="5" height="5" fill="#fff"/>'
    '<rect x="8" y="8" width="5" height="5" fill="#fff"/>'
)


def svg(count: int) -> str:
    badge = ""
    if count > 0:
        label = str(count) if count < 10 else "9+"
        size = 7 if len(label) == 1 else 5.5
        badge = (
            '<circle cx="11.5" cy="4.5" r="4.5" fill="#d92d20" stroke="#fff" stroke-width="0.8"/>'
            f'<text x="11.5" y="4.5" dy="0.35em" text-anchor="middle" font-family="Arial, '
            f'sans-serif" font-weight="700" font-size="{size}" fill="#fff">{label}</text>'
        )
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">{BASE}{badge}</svg>'


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request: HttpRequest, count: int) -> HttpResponse:
    return HttpResponse(svg(min(count, 10)), content_type="image/svg+xml")
