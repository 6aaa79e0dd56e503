"""A redis-server of the test's own (tests/redis_server.py), for the Redis fault tests."""

from tests.redis_server import our_redis  # noqa: F401 (fixture)
