"""Shared pytest setup for every package's tests. Keep it small: fixtures belong to the
package folders (e.g. ``tests/server/conftest.py``)."""

import sys
from pathlib import Path

# Make the repository's packages importable when pytest is run as `pytest`, not only as
# `python -m pytest` from the repository root.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
