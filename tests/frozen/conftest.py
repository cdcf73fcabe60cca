"""One real judge (real bubblewrap jail) for the frozen corpus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from exercises.judge import Judge

from .corpus import SECRET


@pytest.fixture(scope="session")
def judge() -> Iterator[Judge]:
    j = Judge(secret=SECRET, pool_size=1)
    yield j
    j.close()
