"""Signed-in clients for the dashboard: an operator (in the "operators" group) and a viewer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from dashboard import roles
from dashboard.models import AuditEntry

LATE_NIGHT = datetime(2026, 1, 2, 23, 30, 5, tzinfo=UTC)  # the next morning in Tokyo


def late_night_entry() -> AuditEntry:
    """An operator's cancel at 23:30:05 UTC on 2 January: an audit line whose date differs
    by zone (the audit-time tests, server-side and in the browser)."""
    return AuditEntry.objects.create(
        who="operator:ana", action="cancel", task_id="t-1", reason="late night", outcome="ok",
        at=LATE_NIGHT,
    )  # fmt: skip


def make_user(django_user_model, username: str, group: str):
    roles.setup_groups()  # a transactional test's flush removes the migration's groups
    user = django_user_model.objects.create_user(username=username, password="pw-" + username)
    user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def operator(django_user_model, transactional_db):
    return make_user(django_user_model, "ana", roles.OPERATORS)


@pytest.fixture
def viewer(django_user_model, transactional_db):
    return make_user(django_user_model, "vic", roles.VIEWERS)


@pytest.fixture
def op(operator) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def view_only(viewer) -> Client:
    client = Client()
    client.force_login(viewer)
    return client
