"""sandbox.seccomp: the filter installed in a real child process denies what it lists (and
nothing an honest job needs), checked syscall by syscall; the program itself is well formed."""

from __future__ import annotations

import json
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import seccomp

REPO = Path(__file__).resolve().parents[2]

#: Runs in a fresh interpreter: checks a few calls work, installs the filter, then tries each
#: probe and prints {probe: "ok" or the errno's name}.
PROBES = r"""
import ctypes, errno, fcntl, json, os, resource, socket, sys, tempfile, threading
from sandbox import seccomp

libc = ctypes.CDLL(None, use_errno=True)

def sys_call(*args):
    def run():
        if libc.syscall(*args) == -1:
            raise OSError(ctypes.get_errno(), "")
    return run

def c_call(name, *args):
    def run():
        if getattr(libc, name)(*args) == -1:
            raise OSError(ctypes.get_errno(), "")
    return run

def thread():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()

def fork():
    if os.fork() == 0:
        os._exit(0)

def file_io():
    with tempfile.TemporaryFile() as fh:
        fh.write(b"x" * 10000)
        fh.seek(0)
        assert len(fh.read()) == 10000

probe_fd = os.open(os.devnull, os.O_RDONLY)

def pthread_join_live():
    # pthread_join waits on the thread's tid with a *shared* futex (the kernel's wake at a
    # thread's exit is a shared one): refused with EINVAL, glibc checks the tid again and spins
    import time
    body = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(lambda _: time.sleep(0.2))
    tid = ctypes.c_ulong()
    assert libc.pthread_create(ctypes.byref(tid), None, body, None) == 0
    assert libc.pthread_join(tid, None) == 0

def pshared_semaphore():
    # a process-shared semaphore (shared futexes): still correct, its wait spins
    import time
    sem = ctypes.create_string_buffer(64)
    assert libc.sem_init(sem, 1, 0) == 0
    t = threading.Thread(target=lambda: (time.sleep(0.2), libc.sem_post(sem)))
    t.start()
    assert libc.sem_wait(sem) == 0
    t.join()

futex_word = ctypes.c_uint32(0)

def mapped():
    import mmap
    return mmap.mmap(-1, 4096)
me, parent = os.getpid(), os.getppid()
PROBES = {
    "socket": lambda: socket.socket().close(),
    "socketpair": lambda: socket.socketpair(),
    "fork": fork,
    "execve": lambda: os.execv("/bin/true", ["true"]),
    "thread": thread,
    "kill_self": lambda: os.kill(me, 0),
    "kill_own_group": lambda: os.kill(-me, 0),
    "kill_parent": lambda: os.kill(parent, 0),
    "kill_everyone": lambda: os.kill(-1, 0),
    "memfd_create": lambda: os.memfd_create("x"),
    "unshare": c_call("unshare", 0),
    "ptrace": c_call("ptrace", 0, 0, 0, 0),
    "mount": c_call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
    "inotify_init1": c_call("inotify_init1", 0),
    "clone3": sys_call(435, 0, 0),
    # review 9: a shared futex on a /jail file is keyed by its inode, the same in every jail
    "futex_waitv": sys_call(449, 0, 0, 0, 0, 0),
    "futex_wake2": sys_call(454, ctypes.byref(futex_word), 1, 1, 130),
    "futex_wait2": sys_call(455, ctypes.byref(futex_word), 1, 1, 130, 0, 1),
    "futex_requeue2": sys_call(456, 0, 0, 1, 1),
    "futex_shared_wake": sys_call(202, ctypes.byref(futex_word), 1, 1, 0, 0, 0),
    "futex_shared_requeue": sys_call(202, ctypes.byref(futex_word), 3, 0, 1, ctypes.byref(futex_word), 0),
    "futex_private_wake": sys_call(202, ctypes.byref(futex_word), 129, 1, 0, 0, 0),
    "futex_private_wait_changed": sys_call(202, ctypes.byref(futex_word), 128, 1, 0, 0, 0),
    "pthread_join_live": pthread_join_live,
    "pshared_semaphore": pshared_semaphore,
    "getrusage_self": lambda: resource.getrusage(resource.RUSAGE_SELF),
    "getrusage_thread": lambda: resource.getrusage(resource.RUSAGE_THREAD),
    "getrusage_children": lambda: resource.getrusage(resource.RUSAGE_CHILDREN),
    "sysinfo": c_call("sysinfo", ctypes.create_string_buffer(256)),
    "cpu_count": lambda: os.cpu_count() or 0,
    "set_mempolicy_home_node": sys_call(450, 0, 0, 0, 0),
    "syscall_999": sys_call(999),
    "prlimit_self": lambda: resource.prlimit(0, resource.RLIMIT_NOFILE),
    "prlimit_parent": lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE),
    "fcntl_getfl": lambda: fcntl.fcntl(probe_fd, fcntl.F_GETFL),
    "fcntl_setown": lambda: fcntl.fcntl(probe_fd, fcntl.F_SETOWN, me),
    "file_io": file_io,
    # review 8: locks and watches on shared files, and the page cache's state, are channels
    "flock": lambda: fcntl.flock(probe_fd, fcntl.LOCK_SH | fcntl.LOCK_NB),
    "fcntl_setlk": lambda: fcntl.lockf(probe_fd, fcntl.LOCK_SH | fcntl.LOCK_NB),
    "fcntl_ofd_getlk": lambda: fcntl.fcntl(probe_fd, 36, bytes(32)),
    "fcntl_notify": lambda: fcntl.fcntl(os.open("/", os.O_RDONLY), fcntl.F_NOTIFY, fcntl.DN_ACCESS),
    "fcntl_setlease": lambda: fcntl.fcntl(probe_fd, 1024, 0),
    "fadvise": lambda: os.posix_fadvise(probe_fd, 0, 0, os.POSIX_FADV_DONTNEED),
    "readahead": sys_call(187, probe_fd, 0, 4096),
    "cachestat": sys_call(451, probe_fd, 0, 0, 0),
    "preadv2_nowait": lambda: os.preadv(probe_fd, [bytearray(1)], 0, os.RWF_NOWAIT),
    "preadv2_plain": lambda: os.preadv(probe_fd, [bytearray(1)], 0, os.RWF_HIPRI),
    "madvise_pageout": lambda: mapped().madvise(21),
    "madvise_dontneed": lambda: mapped().madvise(4),
    "mincore": sys_call(27, 0, 4096, 0),
    # review 10: per-user quotas shared by every jail (message queue bytes, pipe pages)
    "mq_open": c_call("mq_open", b"/probe", os.O_CREAT | os.O_RDWR, 0o600, None),
    "mq_unlink": sys_call(241, b"probe"),  # glibc would turn EPERM into EACCES
    "fcntl_setpipe_sz": lambda: fcntl.fcntl(os.pipe()[1], 1031, 1 << 20),
    "fcntl_getpipe_sz": lambda: fcntl.fcntl(os.pipe()[1], 1032),
    # review 11: the system folders are binds of the host disk, whose usage moves with its writes
    "statvfs": lambda: os.statvfs("/"),
    "fstatvfs": lambda: os.fstatvfs(probe_fd),
    "ustat": sys_call(136, os.stat("/").st_dev, ctypes.create_string_buffer(64)),
    "quotactl": sys_call(179, 0x800007, b"/", 0, 0),
    "pathconf_name_max": lambda: os.pathconf("/", "PC_NAME_MAX"),
}

def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))

before = {name: attempt(PROBES[name]) for name in ("socket", "unshare", "kill_parent", "fcntl_getpipe_sz")}
seccomp.install(me)
after = {name: attempt(fn) for name, fn in PROBES.items()}
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
print(json.dumps({"before": before, "after": after, "seccomp": status["Seccomp"].strip(),
                  "no_new_privs": status["NoNewPrivs"].strip()}))
"""

EXPECTED = {
    "socket": "EPERM", "socketpair": "EPERM", "fork": "EPERM", "execve": "EPERM", "thread": "ok",
    "kill_self": "ok", "kill_own_group": "ok", "kill_parent": "EPERM", "kill_everyone": "EPERM",
    "memfd_create": "EPERM", "unshare": "EPERM", "ptrace": "EPERM", "mount": "EPERM", "inotify_init1": "EPERM",
    "clone3": "ENOSYS", "futex_waitv": "ENOSYS", "futex_wake2": "ENOSYS", "futex_wait2": "ENOSYS",
    "futex_requeue2": "ENOSYS", "futex_shared_wake": "EINVAL", "futex_shared_requeue": "EINVAL",
    "futex_private_wake": "ok", "futex_private_wait_changed": "EAGAIN", "pthread_join_live": "ok",
    "pshared_semaphore": "ok", "getrusage_self": "EPERM", "getrusage_thread": "EPERM", "getrusage_children": "ok",
    "sysinfo": "EPERM", "cpu_count": "ok", "set_mempolicy_home_node": "ENOSYS", "syscall_999": "ENOSYS",
    "prlimit_self": "ok", "prlimit_parent": "EPERM", "fcntl_getfl": "ok", "fcntl_setown": "EPERM", "file_io": "ok",
    "flock": "EPERM", "fcntl_setlk": "EPERM", "fcntl_ofd_getlk": "EPERM", "fcntl_notify": "EPERM",
    "fcntl_setlease": "EPERM", "fadvise": "EPERM", "readahead": "EPERM", "cachestat": "ENOSYS",
    "preadv2_nowait": "EPERM", "preadv2_plain": "ok", "madvise_pageout": "EPERM", "madvise_dontneed": "ok",
    "mincore": "EPERM", "mq_open": "EPERM", "mq_unlink": "EPERM", "fcntl_setpipe_sz": "EPERM",
    "fcntl_getpipe_sz": "EPERM", "statvfs": "ENOSYS", "fstatvfs": "ENOSYS", "ustat": "ENOSYS", "quotactl": "EPERM",
    "pathconf_name_max": "ok",
}

needs_table = pytest.mark.skipif(platform.machine() != "x86_64", reason="the probes use x86_64 syscall numbers")


def _python(script: str) -> subprocess.CompletedProcess[str]:
    # a session of its own: kill(-pid) names the child's own group only
    return subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r})\n" + script],
                          capture_output=True, text=True, timeout=60, start_new_session=True)


@pytest.fixture(scope="module")
def probed() -> dict:
    run = _python(PROBES)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_probes_work_before_the_filter(probed: dict) -> None:
    assert probed["before"] == {"socket": "ok", "unshare": "ok", "kill_parent": "ok", "fcntl_getpipe_sz": "ok"}


@needs_table
@pytest.mark.parametrize("probe", sorted(EXPECTED))
def test_each_syscall_answers_as_the_filter_says(probed: dict, probe: str) -> None:
    assert probed["after"][probe] == EXPECTED[probe]


def test_the_filter_is_in_force_with_no_new_privileges(probed: dict) -> None:
    assert probed["seccomp"] == "2" and probed["no_new_privs"] == "1"


@needs_table
def test_the_x32_abi_kills_the_process() -> None:
    run = _python("import ctypes, os\nfrom sandbox import seccomp\nseccomp.install(os.getpid())\n"
                  "ctypes.CDLL(None).syscall(0x40000000 | 39)\nprint('survived')\n")
    assert run.returncode == -signal.SIGSYS and "survived" not in run.stdout


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_program_is_whole_instructions_within_the_kernels_limit(machine: str) -> None:
    program = seccomp.build_filter(5, machine)
    assert len(program) % 8 == 0 and 0 < len(program) // 8 <= 4096
    assert program != seccomp.build_filter(6, machine)  # the pid is in the signal rules
    assert program[-8:] == seccomp._ret(seccomp._RET_ALLOW)  # default: allow


def test_the_architectures_have_their_own_programs_and_others_are_refused() -> None:
    assert seccomp.build_filter(5, "x86_64") != seccomp.build_filter(5, "aarch64")
    with pytest.raises(OSError, match="no seccomp syscall table for riscv64"):
        seccomp.build_filter(5, "riscv64")

