"""Shared pytest setup for every package's tests. Keep it small: fixtures belong to the
package folders (e.g. ``tests/server/conftest.py``).

The suite runs on parallel workers (pytest-xdist, ``scripts/test``: ``-n N --dist loadgroup``).
Work is handed out one unit at a time in collection order; a unit is one test, or every test of
a group, which one worker runs in order. ``_group`` below makes the groups, so that tests that
share something run on one worker:

- ``hostile``: all of tests/hostile. One jail for the package (its ``jail`` fixture), and the
  hygiene test (tests/hostile/test_zz_hygiene.py) looks at the whole machine (``sleep 3600``
  processes, /tmp names hostile code tries to leave) after every other hostile test of its
  process: it runs last in the group, so last after all of them, whichever worker has it.
- one group per test module whose tests share a module- or package-scoped fixture of the suite
  (a server, a platform, a browser): set up once, not once per worker.

Long groups go first, so that no worker is left with one at the end; the compose check goes
last (it only waits for the background run that scripts/test started)."""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item.nodeid: _group(item) for item in items}

    def order(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path == COMPOSE_CHECK:
            return 3
        if groups[item.nodeid] in FIRST:
            return 1 if path == HYGIENE else 0  # the hygiene test after every other hostile test
        return 2

    items.sort(key=order)  # stable: collection order within each rank
    # A worker tells the controller's scheduler the groups (the first worker: all collect alike).
    target = getattr(config, "workerinput", {}).get(GROUPS_KEY)
    if target and config.workerinput.get("workerid") == "gw0":  # type: ignore[attr-defined]
        tmp = Path(target + ".part")
        tmp.write_text(json.dumps({nodeid: group for nodeid, group in groups.items() if group}))
        tmp.replace(target)


# pytest-xdist's own xdist_group marks rename node ids, which pytest 9 no longer allows (the
# groups are silently lost), so --dist loadgroup gets this scheduler: LoadScope's, with the
# scopes above. It hands out one unit (a test, or a whole group) at a time, in collection order.
GROUPS_KEY = "ppo_grader_groups"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller, per worker: where the first worker writes the groups."""
    if not hasattr(node.config, "_ppo_grader_groups"):
        folder = tempfile.mkdtemp(prefix="ppo-grader-xdist-")
        node.config._ppo_grader_groups = os.path.join(folder, "groups.json")
        node.config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    node.workerinput[GROUPS_KEY] = node.config._ppo_grader_groups


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if not hasattr(self, "_groups"):  # read once all workers have collected
                found = Path(getattr(config, "_ppo_grader_groups", ""))
                self._groups = json.loads(found.read_text()) if found.is_file() else {}
            return self._groups.get(nodeid) or nodeid  # type: ignore[no-any-return]

    return GroupScheduling(config, log)
