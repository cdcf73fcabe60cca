"""sandbox.jailfs: the bubblewrap command line, read as arguments and then run for real: what a
process inside the jail can see, import, write and reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sandbox import jailfs

REPO = Path(__file__).resolve().parents[2]
VENV_SITE = sysconfig.get_paths()["purelib"]

#: Runs inside the jail (no torch import: ``find_spec`` finds without importing).
INSIDE = r"""
import errno, importlib.util, json, os, socket, sys
sys.path[:0] = ["/jail/lib", "/jail/site"]
REPO, VENV_SITE, BASE_SITE = sys.argv[1:4]

def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False

def write(folder):
    try:
        with open(os.path.join(folder, "ppo-jailfs-probe"), "w") as fh:
            fh.write("x")
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]

status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
print(json.dumps({
    "ids": [os.getuid(), os.getgid(), os.getpid()],
    "env": sorted(os.environ),
    "hostname": socket.gethostname(),
    "cap_eff": int(status["CapEff"], 16),
    "found": {m: found(m) for m in ("torch", "safetensors", "numpy", "sandbox.protocol", "server", "exercises",
                                    "fastapi", "sqlalchemy", "pytest")},
    "exists": {p: os.path.exists(p) for p in (REPO, VENV_SITE, "/etc/passwd", "/etc/shadow", "/home", "/var")},
    "base_site": os.listdir(BASE_SITE) if os.path.isdir(BASE_SITE) else None,
    "writes": {p: write(p) for p in ("/", "/tmp", "/dev", "/jail", "/jail/lib/sandbox", "/usr", "/etc")},
    "interfaces": sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]),
}))
"""


def _value(args: list[str], flag: str) -> list[str]:
    """Every argument that follows ``flag``."""
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


@pytest.fixture(scope="module")
def inside() -> dict:
    base_site = os.path.join(os.path.realpath(sys.base_prefix), "lib", f"python{sys.version_info.major}."
                             f"{sys.version_info.minor}", "site-packages")
    cmd = jailfs.bwrap_command() + [os.path.realpath(sys.executable), "-I", "-S", "-B", "-c", INSIDE,
                                    str(REPO), VENV_SITE, base_site]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_inside_the_jail_it_is_an_unprivileged_pid_1_with_a_clean_environment(inside: dict) -> None:
    assert inside["ids"] == [jailfs.JAIL_UID, jailfs.JAIL_UID, 1]
    assert inside["cap_eff"] == 0 and inside["hostname"] == "jail"
    assert set(inside["env"]) <= {"LANG", "OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_", "PWD"}


def test_only_the_allowed_distributions_and_the_sandbox_can_be_imported(inside: dict) -> None:
    found = inside["found"]
    assert found["torch"] and found["safetensors"] and found["numpy"] and found["sandbox.protocol"]
    assert not any(found[m] for m in ("server", "exercises", "fastapi", "sqlalchemy", "pytest")), found


def test_the_repository_the_venv_and_the_hosts_files_are_not_there(inside: dict) -> None:
    assert not any(inside["exists"].values()), inside["exists"]
    assert inside["base_site"] in (None, [])  # an empty tmpfs over the interpreter's own site-packages


def test_nothing_in_the_jail_is_writable(inside: dict) -> None:
    assert all(result in ("EROFS", "EACCES") for result in inside["writes"].values()), json.dumps(inside["writes"])


def test_there_is_no_network_but_loopback(inside: dict) -> None:
    assert inside["interfaces"] == ["lo"]


def test_the_command_line_isolates_everything_and_ends_with_a_separator() -> None:
    args = jailfs.bwrap_command()
    assert args[0] == jailfs.bwrap_path() and args[-1] == "--"
    for flag in ("--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv", "--as-pid-1"):
        assert flag in args, flag
    assert _value(args, "--cap-drop") == ["ALL"] and "--share-net" not in args
    assert _value(args, "--bind") == [] and "--dev-bind" not in args  # read-only binds only (no GPU)


def test_the_sandbox_and_each_allowed_entry_are_bound_read_only_in_their_place() -> None:
    args = jailfs.bwrap_command()
    binds = {args[i + 2]: args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"}
    assert binds[f"{jailfs.JAIL_LIB}/sandbox"] == str(Path(jailfs.__file__).resolve().parent)
    entries = jailfs.allowed_site_entries()
    tops = {Path(jail).name for _, jail in entries}
    assert {"torch", "safetensors", "numpy"} <= tops
    assert not tops & {"server", "exercises", "fastapi", "sqlalchemy", "pydantic", "pytest"}, tops
    for host, jail in entries:
        assert binds[jail] == host and Path(host).exists() and jail.startswith(jailfs.JAIL_SITE + "/")
    assert not any(str(REPO) == h or h.startswith(str(REPO) + "/server") for h in binds.values())


def test_each_hidden_site_folder_is_covered_after_the_bind_it_lies_in() -> None:
    """bubblewrap applies its arguments in order: a tmpfs before its bind would be hidden by it."""
    args = jailfs.bwrap_command()
    bound = [(i, args[i + 1]) for i, a in enumerate(args) if a == "--ro-bind"]
    tmpfs = [(i, args[i + 1]) for i, a in enumerate(args) if a == "--tmpfs"]
    assert tmpfs and tmpfs[-1][1] == "/tmp"
    # /dev/pts covers bubblewrap's own devpts (after --dev), not a bind: tests/sandbox/test_boundary.py
    dev_pts = [i for i, folder in tmpfs if folder == "/dev/pts"]
    assert len(dev_pts) == 1 and args.index("--dev") < dev_pts[0]
    for i, folder in [t for t in tmpfs[:-1] if t[1] != "/dev/pts"]:
        roots = [j for j, root in bound if folder == root or folder.startswith(root.rstrip("/") + "/")]
        assert roots and max(roots) < i, folder
        assert args[i + 2: i + 4] == ["--remount-ro", folder]


def test_a_gpu_jail_adds_the_nvidia_devices_and_sys() -> None:
    args = jailfs.bwrap_command(gpu=True)
    assert _value(args, "--ro-bind-try") == ["/sys"]
    assert all(dev.startswith("/dev/nvidia") for dev in _value(args, "--dev-bind"))


def test_python_boot_isolates_the_interpreter_and_finds_the_host_module() -> None:
    jailed = jailfs.python_boot(True)
    assert jailed[1:5] == ["-I", "-S", "-B", "-c"] and jailfs.JAIL_LIB in jailed[5] and "sandbox.host" in jailed[5]
    plain = jailfs.python_boot(False)
    assert plain[:3] == [sys.executable, "-I", "-B"] and str(REPO) in plain[4]


def test_no_bubblewrap_is_jail_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(jailfs.JailUnavailable, match="apt-get install bubblewrap"):
        jailfs.bwrap_command()
