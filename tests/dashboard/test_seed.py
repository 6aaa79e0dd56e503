"""`seed_demo` makes an operator who can act and a viewer who can only look."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings

from dashboard.roles import can_operate

pytestmark = pytest.mark.django_db


def test_seed_demo_creates_an_operator_and_a_viewer(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    with override_settings(DEBUG=True):
        call_command("seed_demo", stdout=(out := StringIO()))
        call_command("seed_demo", stdout=StringIO())  # idempotent
    User = get_user_model()
    operator, viewer = User.objects.get(username="operator"), User.objects.get(username="viewer")
    # an operator by its group, not by being a superuser (or staff: /admin/ is not for it)
    assert not operator.is_superuser and not operator.is_staff
    assert list(operator.groups.values_list("name", flat=True)) == ["operators"]
    assert not operator.user_permissions.exists()
    assert list(viewer.groups.values_list("name", flat=True)) == ["viewers"]
    assert can_operate(operator) and not can_operate(viewer)
    password = (tmp_path / "demo-viewer-password").read_text().strip()
    assert viewer.check_password(password) and password in out.getvalue()
    assert oct((tmp_path / "demo-viewer-password").stat().st_mode)[-3:] == "600"


def test_seed_demo_turns_an_earlier_superuser_demo_operator_into_a_plain_operator(
    tmp_path, settings
):
    """Development databases seeded before the operator stopped being a superuser."""
    settings.VAR_DIR = tmp_path
    User = get_user_model()
    User.objects.create_superuser("operator", password="old-password")
    with override_settings(DEBUG=True):
        call_command("seed_demo", stdout=StringIO())
    operator = User.objects.get(username="operator")
    assert not operator.is_superuser and not operator.is_staff
    assert can_operate(operator) and operator.check_password("old-password")
