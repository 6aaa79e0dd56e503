"""Issue 15, "Operator dashboard, second pass": what an operator sees after a refused form
(no empty alert), on answer cards after a refused answer (the task's title, not its id),
and after a rejection (it says "rejected" on the task page and in plain-words flashes;
viewers get no approve/reject hint). The live refresh after a refused form is a browser
test (tests/browser/test_second_pass_task_page.py)."""

from __future__ import annotations

import re

import pytest

from a2a import services
from tests.conftest import AGENT
from tests.dashboard.test_inbox import asking

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"title": "Approve the plan", "fields": [{"name": "ok", "type": "approval"}]}


def flashes(html: str) -> list[str]:
    return [" ".join(m.split()) for m in re.findall(r'<li class="flash-\w+">(.*?)</li>', html)]


def card_title(html: str, task_id: str) -> str:
    match = re.search(rf'<a class="item-task" href="/tasks/{task_id}">(.*?)</a>', html, re.S)
    assert match, "no answer card on the page"
    return match.group(1).strip()


def big_chip(html: str) -> tuple[str, str]:
    """The state chip of the task page's head: (its attributes, its text)."""
    match = re.search(r'<span class="chip chip-lg"([^>]*)>(.*?)</span>', html, re.S)
    assert match
    return match.group(1), " ".join(match.group(2).split())


# --- bug 2: a refused task form shows its error beside the field, with no empty alert ----


@pytest.mark.parametrize(
    ("action", "post", "said"),
    [
        ("resume", {"resume_input": "{not json", "continue_transcript": "on"}, "Not valid JSON"),
        ("cancel", {"reason": "   "}, "Give a reason: it is recorded with the action."),
    ],
)
def test_a_refused_form_shows_its_error_beside_the_field_and_no_empty_alert(
    op, make_task, unchanged, action, post, said
):
    task = make_task("paused-by-client")
    with unchanged():
        response = op.post(f"/tasks/{task.id}/{action}", post)
    assert response.status_code == 400
    html = response.content.decode()
    assert re.search(rf'<p class="field-error"[^>]*>\s*{re.escape(said)}', html)
    assert 'role="alert"' not in html  # the error is beside its field; no empty red box


def test_a_refusal_by_the_services_still_says_why_in_the_alert(op, make_task):
    task = make_task("working")
    response = op.post(f"/tasks/{task.id}/resume", {"continue_transcript": "on"})
    assert response.status_code == 409
    alert = re.search(r'<p class="form-error" role="alert" id="action-error">(.*?)</p>',
                      response.content.decode(), re.S)  # fmt: skip
    assert alert and alert.group(1).strip()


# --- bug 5: an answer card keeps the task's title after a refused answer ------------------


@pytest.mark.parametrize("where", ["inbox", "task", "demo"])
def test_a_refused_answer_keeps_the_task_title_on_its_card(op, make_task, where):
    task, interrupt = asking(make_task, text="Roll out 2.14")
    next_url = {"inbox": "/inbox", "task": f"/tasks/{task.id}", "demo": f"/demo?guided={task.id}"}
    response = op.post(
        f"/inbox/{interrupt.pk}/answer",
        {"v.decision": "approve", "v.replicas": "three", "next": next_url[where]},
    )
    assert response.status_code == 400
    assert card_title(response.content.decode(), task.id) == "Roll out 2.14"


@pytest.mark.parametrize(
    "path", ["/inbox", "/tasks/{task}", "/demo?guided={task}", "/inbox/{interrupt}?next=/demo"]
)
def test_every_answer_card_names_the_task_by_its_title(op, make_task, path):
    task, interrupt = asking(make_task, text="Roll out 2.14")
    html = op.get(path.format(task=task.id, interrupt=interrupt.pk)).content.decode()
    assert card_title(html, task.id) == "Roll out 2.14"


# --- bug 9: a rejection says so ----------------------------------------------------------


def test_a_rejected_approval_that_completes_says_rejected_on_the_task_page(op, make_task):
    task, interrupt = asking(make_task, request=APPROVAL)
    op.post(f"/inbox/{interrupt.pk}/answer", {"v.ok": "reject", "v.ok.comment": "too risky"})
    services.complete_task(task.id, actor=AGENT, text="Stood down.")
    html = op.get(f"/tasks/{task.id}").content.decode()
    attrs, text = big_chip(html)
    assert text == "Completed · rejected"
    assert 'data-state="completed"' in attrs and 'data-outcome="rejected"' in attrs
    banner = re.search(r'<div class="banner banner-completed"([^>]*)>.*?<h2>(.*?)</h2>', html, re.S)
    assert banner and 'data-outcome="rejected"' in banner.group(1)
    assert banner.group(2).strip() == "Completed · rejected"


def test_an_approved_task_that_completes_is_plainly_completed(op, make_task):
    task, interrupt = asking(make_task, request=APPROVAL)
    op.post(f"/inbox/{interrupt.pk}/answer", {"v.ok": "approve", "v.ok.comment": "ship it"})
    services.complete_task(task.id, actor=AGENT, text="Done.")
    attrs, text = big_chip(op.get(f"/tasks/{task.id}").content.decode())
    assert text == "Completed" and "data-outcome" not in attrs


@pytest.mark.parametrize(
    ("post", "flash"),
    [
        ({"v.ok": "reject", "v.ok.comment": "too risky"}, "Rejected: too risky"),
        ({"v.ok": "approve", "v.ok.comment": "ship it"}, "Approved: ship it"),
        ({"v.ok": "approve"}, "Approved."),
    ],
)
def test_the_flash_after_a_decision_is_in_plain_words(op, make_task, post, flash):
    _task, interrupt = asking(make_task, request=APPROVAL)
    response = op.post(f"/inbox/{interrupt.pk}/answer", {**post, "next": "/inbox"}, follow=True)
    assert flashes(response.content.decode()) == [flash]


def test_the_flash_after_an_answer_without_a_decision_is_in_plain_words(op, make_task):
    _task, interrupt = asking(
        make_task, request={"title": "Budget", "fields": [{"name": "budget", "type": "integer"}]}
    )
    response = op.post(f"/inbox/{interrupt.pk}/answer", {"v.budget": "200"}, follow=True)
    assert flashes(response.content.decode()) == ["Answer sent; the task goes on."]


def test_viewers_get_no_approve_or_reject_shortcut_hint(op, view_only, make_task):
    asking(make_task, request=APPROVAL)
    hint = re.compile(r"<kbd>[ar]</kbd>")
    assert hint.search(op.get("/inbox").content.decode())
    as_viewer = view_only.get("/inbox").content.decode()
    assert not hint.search(as_viewer)
    assert "<kbd>j</kbd>" in as_viewer  # moving between requests still works for them


# --- bug 4: a resumed task says it waits for a worker ----------------------------------------


def test_a_resumed_task_no_worker_took_says_so_on_its_page_until_one_does(op, make_task):
    task = make_task("working")  # no workers run in these tests: nobody takes the run
    services.pause_task(task.id, actor=AGENT, reason="hold")
    services.resume_task(task.id, actor=AGENT)
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "Resumed, waiting for a worker</h2>" in html
    assert big_chip(html)[1] == "Working · waiting"  # as the board's chip says it
    services.note_pickup(task.id, actor=services.Actor("agent", "runtime"))  # a worker took it
    html = op.get(f"/tasks/{task.id}").content.decode()
    assert "waiting for a worker" not in html
    assert big_chip(html)[1] == "Working"


def test_a_task_resumed_into_a_pause_does_not_wait_for_a_worker(op, make_task):
    task = make_task("working")
    services.pause_task(task.id, actor=AGENT, reason="hold")
    assert "waiting for a worker" not in op.get(f"/tasks/{task.id}").content.decode()
