"""Test settings: the real settings, with a throwaway secret key.

The database and channel layer still come from DATABASE_URL / REDIS_URL, so `make test`
runs the same suite on SQLite and on PostgreSQL + Redis.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "insecure-key-for-tests-only")

from dashboard.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
