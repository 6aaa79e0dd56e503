"""The tab icon with the pending-approval count (issue 15, feature 4): served from 'self'
(the CSP allows no data: images), one per count up to "9+", cached a day."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.parametrize(("count", "label"), [(1, ">1<"), (9, ">9<"), (10, ">9+<"), (4242, ">9+<")])
def test_the_icon_carries_the_count(count, label):
    response = Client().get(f"/favicon-{count}.svg")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert "public" in response["Cache-Control"] and "max-age=86400" in response["Cache-Control"]
    assert label in response.content.decode() and "<circle" in response.content.decode()


def test_no_count_no_badge_and_nothing_else_is_an_icon():
    plain = Client().get("/favicon-0.svg").content.decode()
    assert plain.startswith("<svg") and "<circle" not in plain and "<text" not in plain
    assert Client().get("/favicon--1.svg").status_code == 404
    assert Client().get("/favicon-x.svg").status_code == 404
    assert Client().post("/favicon-1.svg").status_code == 405
