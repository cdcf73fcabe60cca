"""After the shared judge closes, no process it started is left, and no file any hostile
submission tried to write outside the jail exists.

It runs after every other hostile test of its process, whatever the file names or the order of
the command line: tests/conftest.py sorts it after them and puts all of tests/hostile in one
xdist group, so on parallel workers they share one worker (one ``jail``), in that order, and
no other worker starts hostile code (the ``sleep 3600`` and /tmp names below are hostile
code's own, so a machine-wide look is this package's alone)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox import cgroups
from tests.hostile.conftest import MARKER, REPO, Jail, _proc_table, descendants


def test_no_process_left_and_nothing_written_outside(jail: Jail) -> None:
    jail.track_hosts()
    jail.judge.close()  # type: ignore[attr-defined]  (the fixture's close is then a no-op)
    deadline = time.monotonic() + 5
    while True:
        table = _proc_table()
        ours = descendants(os.getpid(), table) - jail.descendants_before
        in_jail_sessions = {pid for pid, (_, sid, _) in table.items() if sid in jail.sessions}
        sleepers = {pid for pid, (_, _, cmd) in table.items()
                    if pid not in jail.processes_before and cmd.startswith(("sleep 3600", "/bin/sleep 3600"))}
        leftover = ours | in_jail_sessions | sleepers
        if not leftover or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not leftover, {pid: table[pid][2][:120] for pid in leftover if pid in table}
    # The host's process count is back where it was, give or take processes of other users of
    # this machine: every process we can attribute to the suite is gone (checked above).

    hits = []
    for base in (REPO,):
        for root, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d not in (".git", ".venv", "node_modules")]
            hits += [os.path.join(root, n) for n in dirs + files if MARKER in n]
    for d in ("/", "/work", "/work/shared", "/usr", "/usr/lib", "/root", "/etc", "/tmp", "/var/tmp", "/dev/shm",
              str(REPO), str(REPO / "exercises")):
        try:
            hits += [os.path.join(d, n) for n in os.listdir(d) if MARKER in n]
        except OSError:
            pass
    assert not hits, hits
    new_tmp = set(os.listdir("/tmp")) - jail.tmp_before
    assert not [n for n in new_tmp if n.startswith(("job-", "fill", "ppo-unjailed")) or MARKER in n], new_tmp
    # Job cgroups carry the pid of the process that made them: none of this suite's may be left
    # (other processes on the machine make their own).
    lay = cgroups.layout()
    if lay is not None:
        parents = {lay.memory_parent, lay.pids_parent, lay.cpuacct_parent} - {None}
        leaked = [p.name for parent in parents for p in Path(parent).glob(f"ppo-job-{os.getpid()}-*")]
        assert not leaked, leaked
