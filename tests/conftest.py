"""Shared pytest setup for every package's tests. Keep it small: fixtures belong to the
package folders (e.g. ``tests/server/conftest.py``).

The suite runs on parallel workers (pytest-xdist, ``scripts/test``: ``-n N --dist loadgroup``).
Work is handed out one unit at a time in collection order; a unit is one test, or every test of
an ``xdist_group``, which one worker runs in order. ``pytest_collection_modifyitems`` below makes
the groups, so that tests that share something run on one worker:

- ``hostile``: all of tests/hostile. One jail for the package (its ``jail`` fixture), and the
  hygiene test (tests/hostile/test_zz_hygiene.py) looks at the whole machine (``sleep 3600``
  processes, /tmp names hostile code tries to leave) after every other hostile test of its
  process: it runs last in the group, so last after all of them, whichever worker has it.
- one group per test module whose tests share a module- or package-scoped fixture of the suite
  (a server, a platform, a browser): set up once, not once per worker.

Long groups go first, so that no worker is left with one at the end; the compose check goes
last (it only waits for the background run that scripts/test started)."""

import sys
from pathlib import Path

import pytest

# Make the repository's packages importable when pytest is run as `pytest`, not only as
# `python -m pytest` from the repository root.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

COMPOSE_CHECK = "tests/compose/test_compose_check.py"
HYGIENE = "tests/hostile/test_zz_hygiene.py"
#: Groups that take minutes on one worker: handed out first.
FIRST = ("hostile",)


def _group(item: pytest.Item) -> str | None:
    """The xdist group of a test, or None (any worker, on its own)."""
    path = item.nodeid.split("::", 1)[0]
    if path.startswith("tests/hostile/"):
        return "hostile"
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        fixturedef = defs[-1]
        if fixturedef.scope in ("class", "module", "package") and getattr(
            fixturedef.func, "__module__", ""
        ).startswith("tests."):
            return path
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item.nodeid: _group(item) for item in items}
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            if groups[item.nodeid] is not None:
                item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))

    def order(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path == COMPOSE_CHECK:
            return 3
        if groups[item.nodeid] in FIRST:
            return 1 if path == HYGIENE else 0  # the hygiene test after every other hostile test
        return 2

    items.sort(key=order)  # stable: collection order within each rank
