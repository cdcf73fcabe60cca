"""Shared pytest setup for every package's tests. Keep it small: fixtures belong to the
package folders (e.g. ``tests/server/conftest.py``)."""

import sys
from pathlib import Path

# Make the repository's packages importable when pytest is run as `pytest`, not only as
# `python -m pytest` from the repository root.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def pytest_collection_modifyitems(items: list) -> None:  # type: ignore[type-arg]
    """The compose check goes last: when scripts/test started it in the background, its test
    only waits for that run, and waiting last lets the whole suite overlap with it."""
    last = [item for item in items if item.nodeid.startswith("tests/compose/test_compose_check.py")]
    items[:] = [item for item in items if item not in last] + last
