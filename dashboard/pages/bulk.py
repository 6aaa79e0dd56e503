"""Bulk actions from the board: preview, confirm, progress (dashboard/bulkops.py).

The selection is the board's filters (or a few ticked rows), evaluated here; the preview
counts what will be done, the confirmation acts on exactly that many (or says the
selection changed), and the operation's page shows its progress until it is done."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard import actions, bulkops, forms, selectors, vocabulary
from dashboard.models import BulkItem, BulkOperation
from dashboard.pages.access import operator_only

REFUSED_LISTED = 200  # refused tasks the operation's page lists by name


def _task_ids(posted: list[str]) -> list[str]:
    """Task ids from a posted form, without those holding NUL: no task has one, and
    PostgreSQL refuses to look for them."""
    return [i for i in posted if "\x00" not in i]


@operator_only("bulk")
def bulk(request: HttpRequest) -> HttpResponse:
    """Preview -> confirm -> the operation's page. A refused form is audited; when only
    the reason is missing the preview is shown again for the same tasks with the error
    beside the reason (the operator types it there), instead of a dead end that loses the
    selection."""
    form = forms.BulkForm(request.POST)
    filters = selectors.Filters.from_query(request.POST)
    back = reverse("board") + (f"?{urlencode(filters.as_query())}" if filters else "")
    valid = form.is_valid()
    if not valid:
        actions.refuse(request.user, "bulk", "bulk", forms.refusal(form))
    if not valid and set(form.errors) - {"reason"}:
        return _invalid(request, form, filters, back, [])
    d = form.cleaned_data
    d.setdefault("reason", "")
    d["ids"] = _task_ids(d["ids"])
    picks = d["ids"] if d["scope"] == "selection" else None
    mode = d.get("mode") or "finish_step"
    context = {"page": "bulk", "form": form, "d": d, "filters": filters, "back": back}
    context["verb"] = vocabulary.verb(d["action"])
    try:
        if valid and request.POST.get("step") == "confirm":
            op = bulkops.start(
                request.user, d["action"], filters, picks=picks, reason=d["reason"],
                mode=mode, expected=d.get("expected") if d.get("expected") is not None else -1,
            )  # fmt: skip
            page = reverse("bulk-operation", kwargs={"op_id": op.pk})
            return redirect(page + (f"?{urlencode(filters.as_query())}" if filters else ""))
        selection = bulkops.select(d["action"], filters, picks)
    except bulkops.TooMany as exc:
        actions.refuse(request.user, f"bulk-{d['action']}", "bulk", str(exc), reason=d["reason"])
        return _invalid(request, form, filters, back, [str(exc)])
    except bulkops.Changed as exc:
        context["changed"] = str(exc)
        selection = bulkops.select(d["action"], filters, picks)
    context.update(step="preview", selection=selection)
    status = 200 if valid and "changed" not in context else (409 if valid else 400)
    return render(request, "dashboard/bulk.html", context, status=status)


def _invalid(request, form, filters, back, errors: list[str]) -> HttpResponse:
    return render(
        request,
        "dashboard/bulk.html",
        {"page": "bulk", "form": form, "filters": filters, "back": back, "step": "invalid",
         "errors": errors},
        status=400,
    )  # fmt: skip


def _operation(op_id: int) -> BulkOperation:
    op = BulkOperation.objects.filter(pk=op_id).first()
    if op is None:
        raise Http404("no such bulk action")
    return op


@login_required
@require_GET
def operation(request: HttpRequest, op_id: int) -> HttpResponse:
    """A bulk action's page: its progress while it runs (static/js/bulk.js polls
    `operation_progress`), then what became of every task, refusals by name."""
    op = _operation(op_id)
    filters = selectors.Filters.from_query(request.GET)  # the board's, to go back to
    refused = list(
        op.items.filter(outcome=BulkItem.Outcome.REFUSED).order_by("id")[:REFUSED_LISTED]
    )
    return render(
        request,
        "dashboard/bulk.html",
        {
            "page": "bulk",
            "step": "operation",
            "op": op,
            "verb": vocabulary.verb(op.action),
            "progress": bulkops.progress(op),
            "refused": refused,
            "titles": selectors.titles_of([i.task_id for i in refused]),
            "back": reverse("board") + (f"?{urlencode(filters.as_query())}" if filters else ""),
        },
    )


@login_required
@require_GET
def operation_progress(request: HttpRequest, op_id: int) -> JsonResponse:
    return JsonResponse(bulkops.progress(_operation(op_id)))
