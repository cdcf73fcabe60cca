"""The bubblewrap command line: what the jail can see, and nothing more.

The jail sees a read-only system (``/usr`` and the dynamic loader's files), the Python
standard library, and an allow-list of installed distributions (PyTorch and what it needs,
safetensors, numpy) bound one by one into ``/jail/site``, plus this ``sandbox`` package at
``/jail/lib/sandbox``. Every other site-packages folder is hidden under an empty tmpfs, so
the server, the exercises (with their references and checks), the database and the
configuration are simply not there. Nothing in the jail is writable: the root, ``/dev``,
``/tmp`` and every bind are read-only; each job gets a private tmpfs ``/tmp`` of its own in
its own namespaces (:mod:`sandbox.isolation`). ``/proc`` is the jail's own, and a job sees none
of it (so it cannot reset memory counters through ``/proc/self/clear_refs`` either). The host is
pid 1 of the jail (``--as-pid-1``), so no other process of the jail holds its control pipes.
There is no network, and no environment but what is set here. ``/dev/pts`` is an empty
read-only tmpfs: a pty counts against one limit of the machine (``kernel.pty.max``), shared by
every jail, and no job needs one (review 10).
"""

from __future__ import annotations

import glob
import importlib.metadata as md
import os
import re
import shutil
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

#: Distributions the jail may import, with their requirements added automatically.
ALLOWED_DISTRIBUTIONS = ("torch", "safetensors", "numpy")
JAIL_LIB = "/jail/lib"
JAIL_SITE = "/jail/site"
#: The uid and gid the host and every job have inside the jail (never root).
JAIL_UID = 1000
_SANDBOX_DIR = Path(__file__).resolve().parent


class JailUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here."""


def bwrap_path() -> str:
    """The bubblewrap binary, or :class:`JailUnavailable`."""
    path = shutil.which("bwrap")
    if path is None:
        raise JailUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    return path


def _requirement_names(dist: md.Distribution) -> list[str]:
    names = []
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        match = re.match(r"\s*([A-Za-z0-9_.\-]+)", req)
        if match:
            names.append(match.group(1))
    return names


@lru_cache(maxsize=1)
def allowed_site_entries() -> tuple[tuple[str, str], ...]:
    """(host path, jail path) pairs for every top-level entry of the allowed distributions."""
    seen: set[str] = set()
    pending = list(ALLOWED_DISTRIBUTIONS)
    entries: dict[str, str] = {}
    while pending:
        name = pending.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        pending.extend(_requirement_names(dist))
        base = Path(str(dist.locate_file(""))).resolve()
        for file in dist.files or []:
            top = file.parts[0]
            if top == ".." or top.endswith(".pth") or top == "__pycache__":
                continue
            host = base / top
            if host.exists():
                entries[top] = str(host)
    return tuple(sorted((host, f"{JAIL_SITE}/{top}") for top, host in entries.items()))


def _hidden_site_dirs(bound_roots: list[str]) -> list[str]:
    """Every site-packages folder inside a bound tree: each gets an empty tmpfs on top."""
    candidates = {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    for scheme_key in ("purelib", "platlib"):
        candidates.add(sysconfig.get_paths()[scheme_key])
    base = Path(sys.base_prefix)
    candidates.update(glob.glob(str(base / "lib" / "python3*" / "site-packages")))
    candidates.update(glob.glob("/usr/lib/python3*/dist-packages") + glob.glob("/usr/local/lib/python3*/dist-packages"))
    candidates.update(glob.glob("/usr/local/lib/python3*/site-packages"))
    hidden = []
    for path in sorted(candidates):
        real = os.path.realpath(path)
        if os.path.isdir(real) and any(real == r or real.startswith(r.rstrip("/") + "/") for r in bound_roots):
            hidden.append(real)
    return hidden


def python_boot(jailed: bool) -> list[str]:
    """The interpreter command that starts the jail host."""
    if jailed:
        boot = (
            f"import sys; sys.path[:0] = [{JAIL_LIB!r}, {JAIL_SITE!r}]; import sandbox.host as h; h.main(sys.argv[1:])"
        )
        return [os.path.realpath(sys.executable), "-I", "-S", "-B", "-c", boot]
    root = str(_SANDBOX_DIR.parent)
    boot = f"import sys; sys.path.insert(0, {root!r}); import sandbox.host as h; h.main(sys.argv[1:])"
    return [sys.executable, "-I", "-B", "-c", boot]


def bwrap_command(gpu: bool = False) -> list[str]:
    """bubblewrap's arguments up to (and including) ``--``; the interpreter command follows."""
    args = [
        bwrap_path(),
        "--unshare-all",
        # An unprivileged uid in the jail's own user namespace: each job's nested namespace maps
        # it again, and the kernel refuses to map uid 0 from a process without capabilities.
        "--unshare-user",
        "--uid",
        str(JAIL_UID),
        "--gid",
        str(JAIL_UID),
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--hostname",
        "jail",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--setenv",
        "MALLOC_MMAP_THRESHOLD_",
        "131072",
    ]
    roots: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
            roots.append(top)
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    prefix = os.path.realpath(sys.base_prefix)
    if not any(prefix == r or prefix.startswith(r + "/") for r in roots):
        args += ["--ro-bind", prefix, prefix]
        roots.append(prefix)
    exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    if not any(exe_dir == r or exe_dir.startswith(r + "/") for r in roots):
        args += ["--ro-bind", exe_dir, exe_dir]
        roots.append(exe_dir)
    for hidden in _hidden_site_dirs(roots):
        args += ["--tmpfs", hidden, "--remount-ro", hidden]
    args += ["--ro-bind", str(_SANDBOX_DIR), f"{JAIL_LIB}/sandbox"]
    for host, jail in allowed_site_entries():
        args += ["--ro-bind", host, jail]
    # /dev is bubblewrap's own small tmpfs of device nodes: read-only, so nothing can be
    # stored there (device nodes stay writable).
    # /proc stays writable for the trusted host and managers (a manager writes its job's uid
    # map there); no job sees it: each job's mount namespace covers /proc with an empty tmpfs.
    # Its /dev/pts is a devpts whose ptys count against the machine's one limit (kernel.pty.max),
    # shared by every jail: covered by an empty read-only tmpfs, /dev/ptmx (a link into it) opens
    # nothing, and nothing in a job needs a terminal (review 10).
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/pts", "--remount-ro", "/dev/pts"]
    args += ["--remount-ro", "/dev"]
    if gpu:
        for dev in sorted(glob.glob("/dev/nvidia*")):
            if os.path.exists(dev) and not os.path.isdir(dev):
                args += ["--dev-bind", dev, dev]
        args += ["--ro-bind-try", "/sys", "/sys"]
    # Only a mount point: each job mounts its own private tmpfs here (sandbox.isolation).
    args += ["--size", str(1 << 20), "--tmpfs", "/tmp", "--remount-ro", "/tmp"]
    # The jail's root is a tmpfs that bubblewrap creates (holding the mount points above):
    # left writable, a job could store files in /, /etc or /jail that outlive it.
    args += ["--remount-ro", "/", "--chdir", "/", "--"]
    return args
