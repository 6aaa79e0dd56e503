"""Sign-in and the two roles: viewers see everything and change nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from a2a.models import Task
from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.django_db(transaction=False)
def test_the_migration_creates_both_roles():
    operators = Group.objects.get(name="operators")
    assert list(operators.permissions.values_list("codename", flat=True)) == ["operate_task"]
    assert not Group.objects.get(name="viewers").permissions.exists()


def test_pages_ask_to_sign_in_on_the_dashboards_own_login_page():
    client = Client()
    for url in ("/", "/inbox", "/demo", "/audit", "/tasks/abc"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=")


def test_signing_in_leads_to_the_board_and_signing_out_back(operator):
    client = Client()
    page = client.get("/login/")
    assert b'name="username"' in page.content and b"csrfmiddlewaretoken" in page.content
    wrong = client.post("/login/", {"username": "ana", "password": "nope"})
    assert wrong.status_code == 200 and b"Please enter a correct username" in wrong.content
    response = client.post("/login/", {"username": "ana", "password": "pw-ana"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert b"Tasks" in response.content and b"operator</span>" in response.content
    out = client.post("/logout/", follow=True)
    assert out.redirect_chain[-1][0] == "/login/"
    assert client.get("/").status_code == 302


def test_a_viewer_sees_the_task_but_no_action(view_only, op, make_task):
    task = make_task("working", text="Re-index the search cluster")
    viewer_page = view_only.get(f"/tasks/{task.id}").content.decode()
    operator_page = op.get(f"/tasks/{task.id}").content.decode()
    assert "Re-index the search cluster" in viewer_page
    assert "data-action=" not in viewer_page and f"/tasks/{task.id}/pause" not in viewer_page
    assert "change nothing" in viewer_page
    assert 'data-action="pause"' in operator_page and 'data-action="cancel"' in operator_page
    board = view_only.get("/").content.decode()
    assert 'id="bulk-form"' not in board and 'id="select-all"' not in board


def test_forged_posts_from_a_viewer_are_refused_change_nothing_and_are_audited(
    view_only, make_task, unchanged
):
    working = make_task("working")
    paused = make_task("paused-by-client")
    waiting = make_task("input-required")
    interrupt = waiting.interrupts.get()
    posts = [
        (f"/tasks/{working.id}/pause", {"reason": "sneaky", "mode": "finish_step"}),
        (f"/tasks/{paused.id}/resume", {}),
        (f"/tasks/{working.id}/cancel", {"reason": "sneaky"}),
        (f"/tasks/{paused.id}/emit", {"name": "x.y"}),
        (f"/inbox/{interrupt.pk}/answer", {"v.decision": "approve"}),
        ("/bulk", {"action": "cancel", "scope": "filter", "reason": "sneaky", "step": "confirm"}),
        ("/demo/start", {"skill": "batch"}),
    ]
    tasks_before = Task.objects.count()
    with unchanged():
        for url, data in posts:
            response = view_only.post(url, data)
            assert response.status_code == 403, url
            assert b"Nothing was changed" in response.content
    assert Task.objects.count() == tasks_before
    refused = AuditEntry.objects.filter(who="operator:vic", outcome="refused")
    assert refused.count() == len(posts)
    assert set(refused.values_list("detail", flat=True)) == {"not permitted: viewers cannot act"}


def test_get_is_not_a_way_to_act(op, make_task, unchanged):
    task = make_task("working")
    with unchanged():
        assert op.get(f"/tasks/{task.id}/pause").status_code == 405


def test_actions_need_the_csrf_token(operator, make_task, unchanged):
    task = make_task("working")
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    with unchanged():
        response = client.post(f"/tasks/{task.id}/pause", {"reason": "r", "mode": "finish_step"})
    assert response.status_code == 403


def test_superusers_operate_too(django_user_model, make_task):
    admin = django_user_model.objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(admin)
    task = make_task("working")
    client.post(f"/tasks/{task.id}/pause", {"reason": "maintenance", "mode": "finish_step"})
    task.refresh_from_db()
    assert task.state == "paused-by-client"
    assert task.current_suspension.requested_by == "operator:root"
