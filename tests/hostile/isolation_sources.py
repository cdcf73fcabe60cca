"""Attacks on the per-job isolation, one per class of the white-box review (issue 10), as
source strings. Probing lines print ``ESCAPED``/``LEAK`` when an attack worked and ``DENIED``
when it did not; templates use ``{name}`` placeholders (literal braces doubled)."""

from __future__ import annotations

from tests.hostile.sources import HONEST, HONEST_AS_IMPL, PROBE

#: What a lazy learner submits: no work at all.
STUB = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    return None\n"

# -- 1. lingering and impersonation ------------------------------------------------------------
#: Reach the host's control pipes (through /proc/1/fd, inherited descriptors, or any pid's fds),
#: write a forged "exited" frame into them, then leave a thread alive after the main thread has
#: exited (blocked in read: no CPU limit fires) hoping to answer later jobs.
LINGER_AND_IMPERSONATE = PROBE + '''
import ctypes, json, os, struct, threading
frame = json.dumps({{"event": "exited", "setup_ok": True, "exit_code": 0, "signal": None,
                    "cpu_seconds": float("-inf"), "files": {{}}, "sizes": {{}}}}).encode()
frame = struct.pack(">II", len(frame), 0) + frame
opened = []
for pid in ["1", "2", "self", str(os.getppid())] + [str(p) for p in range(3, 40)]:
    for fd in range(0, 16):
        for mode in (os.O_WRONLY, os.O_RDONLY):
            try:
                f = os.open(f"/proc/{{pid}}/fd/{{fd}}", mode | os.O_NONBLOCK)
            except OSError:
                continue
            opened.append((pid, fd))
            try:
                os.write(f, frame)
            except OSError:
                pass
print("ESCAPED opened control fds" if opened else "DENIED no /proc fd of any process", opened[:5])
inherited = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        inherited.append(fd)
    except OSError:
        pass
print("ESCAPED inherited fds" if inherited else "DENIED no inherited descriptor", inherited)
_try("signal pid 1", lambda: os.kill(1, 0), "ESCAPED")
_try("signal parent", lambda: os.kill(os.getppid(), 0), "ESCAPED")
r, w = os.pipe()
threading.Thread(target=lambda: os.read(r, 1)).start()
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: only the main thread ends; the reader lingers
'''

# -- 2. shared, unwipeable /tmp ----------------------------------------------------------------
#: Make /tmp unwipeable, plant result folders and hard links where later jobs are set up.
POISON_TMP = PROBE + '''
import os
here = os.getcwd()
print("CWD", here)
for n in range(0, 40):
    for base in ("/tmp", os.path.dirname(os.path.dirname(here)), os.path.dirname(here)):
        try:
            os.makedirs(os.path.join(base, f"job-{{n}}", "result.json"), exist_ok=True)
            os.makedirs(os.path.join(base, f"job-{{n}}", "tmp"), exist_ok=True)
        except OSError:
            pass
for target in ("request.json", "inputs.safetensors", "result.json", "stdout.txt"):
    for n in range(0, 40):
        try:
            os.link(os.path.join(os.path.dirname(here), target), f"/tmp/job-{{n}}/{{target}}.{marker}")
        except OSError:
            pass
for path in ("/tmp", os.path.dirname(here), here):
    try:
        os.chmod(path, 0o333)
    except OSError:
        pass
'''

# -- 3. reaching ancestors ---------------------------------------------------------------------
REACH_ANCESTORS = PROBE + '''
import ctypes, fcntl, os, struct
libc = ctypes.CDLL(None, use_errno=True)
lim = struct.pack("QQ", 0, 0)
for pid in (1, os.getppid(), 3, 100):
    ok = libc.syscall(302, pid, 6, ctypes.c_char_p(lim), None) == 0  # prlimit64(pid, RLIMIT_NPROC, 0)
    print(("ESCAPED" if ok else "DENIED") + f" prlimit64 pid {{pid}}")
    ok = libc.syscall(141, 0, pid, 19) == 0  # setpriority(PRIO_PROCESS, pid, 19)
    print(("ESCAPED" if ok else "DENIED") + f" setpriority pid {{pid}}")
    mask = ctypes.c_ulong(1)
    ok = libc.syscall(203, pid, ctypes.sizeof(mask), ctypes.byref(mask)) == 0  # sched_setaffinity
    print(("ESCAPED" if ok else "DENIED") + f" sched_setaffinity pid {{pid}}")
r, w = os.pipe()
for name, cmd, arg in (("F_SETOWN", 8, 1), ("F_SETSIG", 10, 9), ("F_SETOWN_EX", 15, 0)):
    ok = libc.syscall(72, r, cmd, arg) == 0
    print(("ESCAPED" if ok else "DENIED") + f" fcntl {{name}}")
# on its own process these stay allowed (a learner may lower its own priority)
print("OWN setpriority", libc.syscall(141, 0, 0, 5))
''' + HONEST

# -- 4. internal_error on demand ---------------------------------------------------------------
EXIT_CODES_OF_THE_SANDBOX = {code: f"import os\nos._exit({code})\n" for code in (13, 20, 21, 22, 23)}
EXIT_CODE_IN_CALL = HONEST_AS_IMPL + '''
import os
def compute_actor_loss(a, b, c, clip_range=0.2):
    os._exit(23)
'''

# -- 5. unbounded data on the trusted side -----------------------------------------------------
#: A 20 kB exception message in every call (5x the cap), with the harness's own cap lifted first; NUL bytes and a lone
#: surrogate in the output.
HUGE_MESSAGE = '''
import sys
h = sys.modules.get("sandbox.harness")
if h is not None:
    h._MAX_TEXT = 10 ** 9
    h._short = lambda text, limit=0: text
print("NUL\\x00BYTE \\ud800 here")
def compute_actor_loss(a, b, c, clip_range=0.2):
    raise ValueError("x" * 20_000)
'''

# -- 6. self-reported facts --------------------------------------------------------------------
#: Edits its inputs in place, then drops the evidence from the harness's report.
HIDE_IN_PLACE_EDIT = '''
import sys, torch
h = sys.modules["sandbox.harness"]
real = h._run_call
def quiet(*a, **k):
    record = real(*a, **k)
    record.pop("inputs_after", None)
    return record
h._run_call = quiet
''' + HONEST_AS_IMPL + '''
def compute_actor_loss(a, b, c, clip_range=0.2):
    loss = _honest(a, b, c, clip_range)
    with torch.no_grad():
        c.mul_(0)   # the caller's advantages are gone
    return loss
'''
#: GAE whose outputs stay attached to the graph, dressed as detached.
GAE_ATTACHED_CLAIMING_DETACHED = '''
import torch
class Detached(torch.Tensor):
    @property
    def requires_grad(self):
        return False
def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask != 0
    r = torch.where(valid, rewards, torch.zeros_like(rewards))
    v = torch.where(valid, values, torch.zeros_like(values))
    adv = []
    last = torch.zeros_like(r[..., 0])
    nxt = torch.zeros_like(last)
    for t in reversed(range(r.shape[-1])):
        delta = r[..., t] + gamma * nxt - v[..., t]
        last = torch.where(valid[..., t], delta + gamma * lam * last, torch.zeros_like(last))
        adv.append(last)
        nxt = v[..., t]
    advantages = torch.stack(adv[::-1], dim=-1)
    returns = torch.where(valid, advantages + v, torch.zeros_like(v))
    return advantages.as_subclass(Detached), returns.as_subclass(Detached)
'''
#: A numpy loss (no autograd at all) whose returned object writes finite-difference gradients
#: into the inputs' .grad when asked to backward().
NUMPY_LOSS_WITH_FAKE_BACKWARD = '''
import numpy as np, torch
def _loss(a, b, c, clip):
    ratio = np.exp(a - b)
    return -np.minimum(ratio * c, np.clip(ratio, 1 - clip, 1 + clip) * c).mean()
class Answer(torch.Tensor):
    def backward(self, gradient=None, *args, **kwargs):
        a, b, c, clip = self._inputs
        base = _loss(a, b, c, clip)
        g = np.zeros_like(a)
        flat, gflat = a.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + 1e-4
            up = _loss(a, b, c, clip)
            flat[i] = old - 1e-4
            down = _loss(a, b, c, clip)
            flat[i] = old
            gflat[i] = (up - down) / 2e-4
        w = 1.0 if gradient is None else gradient.detach().numpy()
        self._leaf.grad = torch.tensor(g * w, dtype=self._leaf.dtype)
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    arrays = [t.detach().double().numpy().copy() for t in (log_probs_new, log_probs_old, advantages)]
    out = torch.tensor(_loss(*arrays, clip_range), dtype=log_probs_new.dtype).as_subclass(Answer)
    out._inputs = (*arrays, clip_range)
    out._leaf = log_probs_new
    return out
'''

# -- 7. the measured run -----------------------------------------------------------------------
#: Honest on small inputs; on the large measured input, a cheap answer that is wrong.
CHEAP_ON_THE_MEASURED_RUN = HONEST_AS_IMPL + '''
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_new.numel() > 100_000:   # the measured case, recognised by its size
        return log_probs_new.reshape(-1)[0] * 0
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''

# -- 8. pathological sources -------------------------------------------------------------------
PATHOLOGICAL_SOURCES = {
    "nested parentheses": "x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n",
    "nested lists": "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "unary minus chain": "x = " + "-" * 1_000_000 + "1\n",
    "nested lambdas": "f = " + "lambda: " * 50_000 + "1\n",
}

# -- gpu-mode's pygpubench exploit list, adapted to this grader --------------------------------
#: ptrace and process_vm_readv on every pid it can guess (the host, the manager, init).
PTRACE_AND_PROCESS_VM = PROBE + '''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 64)
remote = IoVec(0x400000, 64)
for pid in (1, os.getppid(), 3, 4, 5):
    ok = libc.ptrace(16, pid, None, None) == 0   # PTRACE_ATTACH
    print(("ESCAPED" if ok else "DENIED") + f" ptrace attach {{pid}}")
    got = libc.syscall(310, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)  # process_vm_readv
    print(("ESCAPED" if got > 0 else "DENIED") + f" process_vm_readv {{pid}}")
ok = libc.ptrace(0, 0, None, None) == 0   # PTRACE_TRACEME: let an ancestor trace us
print(("ESCAPED" if ok else "DENIED") + " ptrace traceme")
''' + HONEST
#: Writes to its own memory through /proc/self/mem (to patch read-only code), and a scan for the
#: grader's secret (the AES-key-recovery idea: find the key in memory, predict the cases).
PROC_MEM_AND_SECRET_SCAN = PROBE + '''
import gc, os
_try("open /proc/self/mem for writing", lambda: open("/proc/self/mem", "r+b"), "ESCAPED")
_try("read /proc/self/environ", lambda: open("/proc/self/environ", "rb").read(), "ESCAPED")
_try("read /proc/1/environ", lambda: open("/proc/1/environ", "rb").read(), "ESCAPED")
# The judge's secret and the canary in the grader's environment, in halves that never meet in
# this module's own text: only a copy from outside would hold them side by side.
PAIRS = [("hostile-suite-", "secret"), ("{canary_head}", "{canary_tail}")]
def holds(text):
    return any(head + tail in text for head, tail in PAIRS)
found = [type(o).__name__ for o in gc.get_objects() if isinstance(o, str) and len(o) < 1_000_000 and holds(o)]
print("LEAK grader secret in memory" if found else "DENIED no grader secret in memory")
print("LEAK grader secret in environment" if holds(str(os.environ)) else "DENIED clean environment")
''' + HONEST
#: Detours the harness's digest (the GOT-patch / function-detour idea): the measured run claims
#: whatever digests it likes while returning a cheap, wrong answer.
DETOUR_THE_DIGEST = HONEST_AS_IMPL + '''
import sys
h = sys.modules["sandbox.harness"]
h.digest = lambda t, seed: [0.0, 0.0]
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_new.numel() > 100_000:
        return log_probs_new.reshape(-1)[0] * 0
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''
#: Timer patching: every clock the harness might read says the call took no time.
PATCH_TIMERS = HONEST_AS_IMPL + '''
import time
time.perf_counter = lambda: 0.0
time.monotonic = lambda: 0.0
time.process_time = lambda: 0.0
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    x = 0
    if log_probs_new.numel() > 100_000:   # the measured case: burn CPU the speed figure must show
        for i in range(4_000_000):
            x += i
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''
#: Module shadowing: torch, safetensors and json replaced in sys.modules and as files in the
#: working folder, so the harness writes results through the learner's modules.
SHADOW_MODULES = HONEST_AS_IMPL + '''
import os, sys, types
for name in ("torch.py", "safetensors.py", "json.py", "sitecustomize.py"):
    try:
        open(name, "w").write("raise SystemExit('shadowed')\\n")
    except OSError:
        pass
fake_json = types.ModuleType("json")
fake_json.dumps = lambda obj, *a, **k: '{{"status": "ok", "calls": []}}'
fake_json.load = lambda fh: {{}}
sys.modules["json"] = fake_json
fake_st = types.ModuleType("safetensors.torch")
fake_st.save_file = lambda tensors, path, *a, **k: None
sys.modules["safetensors.torch"] = fake_st
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    return log_probs_new.sum() * 0
'''
#: A seccomp filter of its own that traps the harness's writes (the seccomp-trap idea).
SECCOMP_TRAP_OWN_WRITES = PROBE + '''
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
# allow everything except write(2) to fd >= 3, which fails with EPERM
prog = b"".join([
    struct.pack("=HBBI", 0x20, 0, 0, 0),          # A = nr
    struct.pack("=HBBI", 0x15, 0, 3, 1),          # nr == write ?
    struct.pack("=HBBI", 0x20, 0, 0, 16),         # A = fd
    struct.pack("=HBBI", 0x35, 0, 1, 3),          # fd >= 3 ?
    struct.pack("=HBBI", 0x06, 0, 0, 0x00050001), # ERRNO(EPERM)
    struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000), # ALLOW
])
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
buf = ctypes.create_string_buffer(prog, len(prog))
p = Prog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
libc.prctl(38, 1, 0, 0, 0)
print("OWN seccomp", libc.prctl(22, 2, ctypes.byref(p), 0, 0))
''' + HONEST

# -- found by the red team -----------------------------------------------------------------------
#: RT-04: the report straddles the wall-clock deadline (big result files, ending just before it),
#: hoping the runner times out mid-frame, kills, and misreads the rest as a new frame.
RACE_THE_DEADLINE = '''
import os, time
T0 = time.monotonic()
n = (8 << 20) - 4096
with open("../result.json", "wb") as f:
    f.write(b" " * n)
with open("../outputs.safetensors", "wb") as f:
    f.write(b"\\0" * n)
time.sleep(max(0.0, T0 + {wall} - {lead} - time.monotonic()))
os._exit(0)
'''
#: RT-07: a forged outputs.safetensors whose header lists ~100k empty tensors (under the file
#: cap), plus a result.json that says "ok".
SAFETENSORS_HEADER_BOMB = '''
import json, os, struct, sys
CAP = 8 << 20
parts, size, i = [], 2, 0
while True:
    item = f'"t{{i}}":{{{{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}}}'
    if size + len(item) + 1 > CAP - 4096:
        break
    parts.append(item); size += len(item) + 1; i += 1
h = ("{{" + ",".join(parts) + "}}").encode()
with open("../outputs.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
_f = sys._getframe()  # the request's file is unlinked before the module runs: the harness's frame
while _f is not None and "request" not in _f.f_locals:
    _f = _f.f_back
with open("../result.json", "w") as f:
    json.dump({{"status": "ok", "calls": [{{"id": c.id}} for c in _f.f_locals["request"].calls]}}, f)
os._exit(0)
'''
#: RT-10: GAE computed on the graph (not detached), with a hook on `values` that zeroes whatever
#: gradient reaches it, so a probe that only looks at gradients sees none.
GAE_ATTACHED_WITH_ZEROING_HOOK = GAE_ATTACHED_CLAIMING_DETACHED.replace(
    "    valid = torch.ones_like", "    if values.requires_grad:\n        values.register_hook(lambda g: torch.zeros_like(g))\n"
    "    valid = torch.ones_like").replace(
    "return advantages.as_subclass(Detached), returns.as_subclass(Detached)", "return advantages, returns")
#: RT-11: syscalls newer than a deny list (the host's mount table through listmount/statmount,
#: memfd_secret, open_tree_attr).
NEWER_SYSCALLS = PROBE + '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
req = ctypes.create_string_buffer(32)
for name, nr, args in (("statmount", 457, (req, buf, 4096, 0)), ("listmount", 458, (req, buf, 64, 0)),
                       ("memfd_secret", 447, (0,)), ("open_tree_attr", 467, (-100, b"/", 0, None, 0)),
                       ("lsm_list_modules", 461, (buf, ctypes.byref(ctypes.c_uint32(64)), 0)),
                       ("mount_setattr", 442, (-100, b"/", 0, None, 0))):
    ret = libc.syscall(nr, *args)
    err = ctypes.get_errno()
    print(("ESCAPED" if ret >= 0 or err != 38 else "DENIED") + f" {{name}} {{ret}} errno {{err}}")
''' + HONEST

#: RT-15 (red team): big result files that hold, at every page boundary, a forged report whose
#: length swallows all but the real report's last 4 KiB, ending just before the wall-clock
#: deadline: a runner that stopped reading mid-report would take the forgery and leave the tail
#: in the pipe, where the next learner's job would read it as its own frame.
POISON_THE_PIPE = '''
# Cross-learner: leave bytes in the jail host's control pipe for the NEXT job on this host.
# 1. Files so big that the manager's "exited" frame is still being read at the wall-clock deadline.
# 2. At every page boundary of that frame (where the runner's TimeoutError can leave it), a forged
#    "exited" frame whose blob_len swallows all but the last X bytes of the real frame, so the runner
#    accepts it (time_limit for us), the manager finishes its write and exits, the host is kept...
# 3. ...and the last X bytes of the real frame (our file's tail) wait in the pipe for the next job.
import json, os, resource, time
T0 = time.monotonic()
WALL = {wall}
LEAD = {lead}
CAP = 8 << 20
CPU_LEN = int(os.environ.get("X_CPULEN", "8"))          # guessed len(repr(cpu_seconds))
HOST_RSS_DIGITS = int(os.environ.get("X_HDIG", "9"))
X = 4096                                                # bytes left in the pipe for the next job
R = O = CAP - 8192
blob_total = R + O                                      # stdout.txt / stderr.txt stay empty
try:
    st = os.statvfs("/tmp")
    T = st.f_blocks * st.f_frsize
    F = st.f_bavail * st.f_frsize - R - O - 8192        # only its number of digits matters
except OSError:  # statfs is refused (review 11): the private /tmp's size is the published limit
    T = {tmp}
    F = T - R - O - 8192
try:
    M = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 * 2   # grows while we build the files
except OSError:  # getrusage of itself is refused (review 9): only the digit count matters, guess it
    M = 400 << 20
files = {{"result.json": R, "outputs.safetensors": O, "stdout.txt": 0, "stderr.txt": 0}}
real = json.dumps({{"event": "exited", "setup_ok": True, "tmp_free_bytes": F, "tmp_total_bytes": T,
                   "exit_code": 0, "signal": None, "cpu_seconds": 10 ** (CPU_LEN - 1), "maxrss_bytes": M,
                   "host_rss_bytes": 10 ** (HOST_RSS_DIGITS - 1), "files": files, "sizes": files}})
L = len(real)   # the same length as the manager's JSON when the guessed digit counts are right

def forged(b):
    """A complete exited frame to sit at blob offset b."""
    remaining = blob_total - b
    fb = 0
    for _ in range(5):
        rj = min(fb, CAP - 1)
        fo = fb - rj
        fl = {{"result.json": rj, "outputs.safetensors": fo}}
        fj = json.dumps({{"event": "exited", "setup_ok": True, "tmp_free_bytes": 0, "tmp_total_bytes": 1,
                         "exit_code": 0, "signal": None, "cpu_seconds": 0.5, "maxrss_bytes": 1,
                         "host_rss_bytes": 1, "files": fl, "sizes": fl}}).encode()
        fb = remaining - 8 - len(fj) - X
    return len(fj).to_bytes(4, "big") + fb.to_bytes(4, "big") + fj
blob = bytearray(blob_total)
k = 1
while True:
    b = 4096 * k - 8 - L
    if b + 600 > blob_total - X - 8192:
        break
    if b >= 0:
        fr = forged(b)
        blob[b:b + len(fr)] = fr
    k += 1
blob[blob_total - X:] = b"\\xff" * X                      # what the next job will read as its "forked" frame
with open("../result.json", "wb") as f:
    f.write(blob[:R])
with open("../outputs.safetensors", "wb") as f:
    f.write(blob[R:])
time.sleep(max(0.0, T0 + WALL - LEAD - time.monotonic()))
os._exit(0)
'''
