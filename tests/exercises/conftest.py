"""One real judge (real bubblewrap jail) shared by the exercise tests."""

import pytest

from exercises.judge import Judge


@pytest.fixture(scope="session")
def judge():
    j = Judge(secret=b"test-secret-" + b"x" * 20, pool_size=1)
    yield j
    j.close()
