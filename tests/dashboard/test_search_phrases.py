"""Issue 15, feature 5: search matches a "quoted phrase" as written (within one field, as
every term), and says which field matched; the board's describe.js follows the same rule
(tests/browser/test_second_pass_inbox_audit.py compares the two)."""

from __future__ import annotations

import pytest

from dashboard.selectors import search_match, search_terms

HOLD = {"reason": "the judge  asked us to hold", "requestedBy": "apikey:ci"}
DECOY = {"taskId": "t-1", "title": "Re-render thumbnails", "skill": "batch", "pause": HOLD}
WANTED = {"taskId": "t-2", "title": "Judge the batch run", "skill": "approval"}


@pytest.mark.parametrize(
    ("q", "terms"),
    [
        ('"batch run" judge', ["batch run", "judge"]),
        ('"Judge   THE"', ["judge the"]),
        ('"unclosed phrase', ["unclosed", "phrase"]),
        ('"" a', ["a"]),
        ("", []),
    ],
)
def test_terms(q, terms):
    assert search_terms(q) == terms


def test_a_phrase_must_appear_as_written_and_the_field_is_named():
    assert search_match(WANTED, '"judge the"') == "title"
    assert search_match(DECOY, '"judge the"') is None  # both words, not together
    assert search_match(DECOY, '"the judge asked"') == "pause reason"  # any run of spaces
    assert search_match(WANTED, '"batch run" judge') == "title"
    assert search_match(DECOY, '"batch run"') is None
    assert search_match(DECOY, "batch") == "agent"
