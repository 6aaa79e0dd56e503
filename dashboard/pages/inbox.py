"""The approvals inbox: pending input requests with what they ask to decide, answered in
place; and the answer endpoint every answer card posts to."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard import actions, forms, selectors
from dashboard import context as decision_context
from dashboard.pages import answer_card, demo, task
from dashboard.pages.access import operator_only, safe_next


def _link(request, **params: str) -> str:
    """This page's URL with these query parameters (the empty ones left out)."""
    query = urlencode({k: v for k, v in params.items() if v})
    return request.path + (f"?{query}" if query else "")


def context(
    request, q: str, cursor: str = "", failed: dict | None = None
) -> tuple[dict[str, Any], int]:
    """The page's context and its status: 400, with the first page and a note, for a page
    link this server did not make."""
    status, note = 200, ""
    try:
        page = selectors.inbox(q, cursor)
    except selectors.BadCursor:
        page = selectors.inbox(q)
        cursor, status = "", 400
        note = "That page link is not one this inbox made: here is the first page."
    here = _link(request, q=q, after=cursor)  # an answer comes back to this page
    items = []
    contexts = decision_context.for_requests([it.interrupt for it in page.pending])
    for it in page.pending:
        around = contexts.get(it.task.id)
        if failed and failed["interrupt"].pk == it.interrupt.pk:
            items.append({**failed, "context": around})
        else:
            items.append(answer_card.card(it.interrupt, here, title=it.title, context=around))
    ctx = {
        "page": "inbox",
        "q": q,
        "items": items,
        "resolved": page.resolved,
        "waiting": page.waiting,
        "waiting_more": page.waiting_more,
        "later_page": bool(cursor),
        "first_link": _link(request, q=q) if cursor else "",
        "next_link": _link(request, q=q, after=page.next_cursor) if page.next_cursor else "",
        "searched_to_end": page.searched_to_end,
        "page_size": selectors.INBOX_PAGE,
        "note": note,
    }
    return ctx, status


@login_required
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    """The inbox, INBOX_PAGE pending requests a page (`?after=` the cursor of the next page's
    link; `?q=` a search), so a page costs the same however many are waiting."""
    ctx, status = context(
        request, (request.GET.get("q") or "").strip(), (request.GET.get("after") or "").strip()
    )
    if request.GET.get("fragment"):
        return render(request, "dashboard/_inbox_lists.html", ctx, status=status)
    return render(request, "dashboard/inbox.html", ctx, status=status)


@login_required
@require_GET
def inbox_item(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    interrupt = selectors.pending_interrupt(interrupt_id)
    if interrupt is None:
        raise Http404("this request is no longer pending")
    next_url = request.GET.get("next") or reverse("inbox")
    around = decision_context.for_requests([interrupt]).get(interrupt.task_id)
    item = answer_card.card(interrupt, safe_next(request, next_url), context=around)
    return render(request, "dashboard/_inbox_item.html", {"item": item})


@operator_only("answer")
def inbox_answer(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    next_url = safe_next(request, request.POST.get("next", ""))
    interrupt = selectors.pending_interrupt(interrupt_id)
    if interrupt is None:
        actions.refuse(request.user, "answer", "", f"{interrupt_id} is no longer pending")
        messages.error(request, "That request was already answered or withdrawn.")
        return redirect(next_url)
    fields = list((interrupt.content.get("request") or {}).get("fields") or [])
    values, errors = forms.answer_values(fields, request.POST)
    if not fields and request.POST.get("v.__text__", "").strip():
        values = {"answer": request.POST["v.__text__"].strip()}
    summary = forms.summarise(values)
    if errors:
        result = actions.refuse(
            request.user,
            "answer",
            interrupt.task_id,
            "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()),
            reason=summary,
            errors=errors,
        )
    else:
        result = actions.answer(
            request.user,
            interrupt.task_id,
            request_id=interrupt.request_id,
            values=values,
            summary=summary,
        )
    if result.ok:
        messages.success(request, result.message)
        return redirect(next_url)
    errors = result.errors or {"__all__": [result.message]}
    failed = answer_card.card(interrupt, next_url, request.POST, errors)
    if next_url.startswith(reverse("demo")):
        ctx = demo.context(request, failed["task"].id, failed=failed)
        return render(request, "dashboard/demo.html", ctx, status=400)
    if next_url.startswith("/tasks/"):
        ctx = task.context(request, interrupt.task_id, item=failed)
        return render(request, "dashboard/task_detail.html", ctx, status=400)
    ctx, _ = context(request, "", failed=failed)
    return render(request, "dashboard/inbox.html", ctx, status=400)
