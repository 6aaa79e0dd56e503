"""The dashboard's signed-in users, for tests that cross into the dashboard (revocation)."""

from tests.dashboard.conftest import operator  # noqa: F401 (fixture)
