"""Bulk actions from the board: preview, confirm, summary."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from dashboard import actions, forms, selectors, vocabulary
from dashboard.pages.access import operator_only


def _task_ids(posted: list[str]) -> list[str]:
    """Task ids from a posted form, without those holding NUL: no task has one, and
    PostgreSQL refuses to look for them."""
    return [i for i in posted if "\x00" not in i]


@operator_only("bulk")
def bulk(request: HttpRequest) -> HttpResponse:
    """Preview -> confirm -> summary. A refused form is audited; when only the reason is
    missing the preview is shown again for the same tasks with the error beside the reason
    (the operator types it there), instead of a dead end that loses the selection."""
    form = forms.BulkForm(request.POST)
    filters = selectors.Filters.from_query(request.POST)
    back = reverse("board") + (f"?{urlencode(filters.as_query())}" if filters else "")
    valid = form.is_valid()
    if not valid:
        actions.refuse(request.user, "bulk", "bulk", forms.refusal(form))
    if not valid and set(form.errors) - {"reason"}:
        return render(
            request,
            "dashboard/bulk.html",
            {"page": "bulk", "form": form, "filters": filters, "back": back, "step": "invalid"},
            status=400,
        )
    d = form.cleaned_data
    d.setdefault("reason", "")
    verb = vocabulary.verb(d["action"])
    d["ids"] = _task_ids(d["ids"])
    if d["scope"] == "filter":
        entries = selectors.matching_entries(filters)
    else:
        entries = selectors.entries_for(d["ids"])
    if not valid or request.POST.get("step") != "confirm":
        preview = selectors.bulk_preview(d["action"], entries, filters.q)
        return render(
            request,
            "dashboard/bulk.html",
            {
                "page": "bulk",
                "step": "preview",
                "form": form,
                "d": d,
                "verb": verb,
                "preview": preview,
                "filters": filters,
                "back": back,
            },
            status=200 if valid else 400,
        )
    ids = _task_ids(request.POST.getlist("confirmed"))
    left_out = [i for i in _task_ids(request.POST.getlist("preskipped")) if i not in ids]
    mode = d["mode"] or "finish_step"
    result = actions.bulk(
        request.user,
        d["action"],
        ids,
        reason=d["reason"],
        mode=mode,
        skipped=selectors.still_skipped(d["action"], left_out),
    )
    titles = {e["taskId"]: e.get("title", "") for e in selectors.entries_for(ids + left_out)}
    return render(
        request,
        "dashboard/bulk.html",
        {
            "page": "bulk",
            "step": "done",
            "d": d,
            "verb": verb,
            "result": result,
            "titles": titles,
            "filters": filters,
            "back": back,
        },
    )
