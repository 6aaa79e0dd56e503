"""The dashboard's signed-in users, for tests that cross into the dashboard (revocation),
and a redis-server of the test's own (tests/redis_server.py), for the frozen-Redis test."""

from tests.dashboard.conftest import operator  # noqa: F401 (fixture)
from tests.redis_server import our_redis  # noqa: F401 (fixture)
