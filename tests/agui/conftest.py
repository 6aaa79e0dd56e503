"""A redis-server of the test's own (tests/redis_server.py), for the Redis fault tests; and
`project_now`, for tests that read the view inside the test's transaction."""

import pytest

from agui import projection
from tests.redis_server import our_redis  # noqa: F401 (fixture)


@pytest.fixture
def project_now():
    """Project every due change now. The projection runs after commit (agui.projection),
    and a test that is not `transaction=True` never commits: it calls this before it reads
    the view (the due rows are visible to its own connection)."""
    return projection.project_due
