"""The one text capper: within its limit, note included, saying exactly how much was cut."""

from __future__ import annotations

import re
import time

import pytest

from sandbox.text import cap, cap_bytes, cut_note

NOTE = re.compile(r" \[\.\.\. (\d+) (characters|bytes) cut\]$")


@pytest.mark.parametrize("length,limit", [(10, 10), (11, 10), (100, 40), (10**6, 4096), (50, 3)])
def test_cap_keeps_the_limit_and_counts_what_it_cut(length: int, limit: int) -> None:
    text = "".join(chr(97 + i % 26) for i in range(length))
    out = cap(text, limit)
    assert len(out) <= limit
    if length <= limit:
        assert out == text
        return
    match = NOTE.search(out)
    if match is None:  # no room for a note at all: the cut alone
        assert out == text[:limit]
        return
    kept = out[: match.start()]
    assert text.startswith(kept) and int(match.group(1)) == length - len(kept)


def test_cap_bytes_never_splits_a_character_and_keeps_the_limit() -> None:
    text = "é€😀" * 1000
    for limit in range(40, 80):
        out = cap_bytes(text, limit)
        assert len(out.encode()) <= limit
        kept = out[: NOTE.search(out).start()]  # type: ignore[union-attr]
        assert text.startswith(kept) and out.endswith(cut_note(len(text) - len(kept)))
    assert cap_bytes("short", 100) == "short"


def test_a_prefix_is_noted_as_cut_from_the_whole() -> None:
    assert cap_bytes("abc", 100, total=1000) == "abc" + cut_note(997)


def test_work_is_bounded_by_the_limit() -> None:
    def hundred_caps(text: str) -> float:
        t0 = time.process_time()
        for _ in range(100):
            cap(text, 4096)
            cap_bytes(text[:4096], 4096, total=len(text))
        return time.process_time() - t0

    small = hundred_caps("x" * 8192)  # the baseline: twice the limit
    assert hundred_caps("x" * (200 << 20)) < 5 * small + 0.2  # 25,000 times the text, not the work
