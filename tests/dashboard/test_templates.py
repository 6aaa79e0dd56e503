"""Template mistakes a reader would see on the page."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_template_has_a_comment_django_would_print():
    """Django's {# … #} comment is one line only: one spread over lines is printed as text
    (the inbox showed "{# One typed input of a generated form … #}" above every answer)."""
    printed = [
        f"{path.relative_to(TEMPLATES)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in TEMPLATES.rglob("*.html")
        for text in [path.read_text()]
        for m in re.finditer(r"\{#(.*?)#\}", text, re.S)
        if "\n" in m.group(1)
    ]
    assert printed == []
