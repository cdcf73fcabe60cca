"""Hostile submissions for the `actor-loss` exercise, as source strings.

Each entry either misbehaves outright or does its attack and then answers honestly, printing
``LEAK``/``ESCAPED`` lines when an attack worked and ``DENIED`` lines when it did not, so a test
can assert on the captured output. Templates use ``{name}`` placeholders filled by the tests
(real paths, ports, marker names); literal braces are doubled.
"""

from __future__ import annotations

HONEST = '''
import torch

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old has the wrong shape")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages has the wrong shape")
    ratio = torch.exp(log_probs_new - log_probs_old)
    return -torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages).mean()
'''

#: An honest body under another name, for submissions that wrap it.
HONEST_AS_IMPL = HONEST.replace("def compute_actor_loss(", "def _honest(")

# A helper every probing submission starts with: run an attempt, print DENIED or the marker.
PROBE = '''
def _try(label, fn, marker="LEAK"):
    try:
        got = fn()
    except BaseException as exc:
        print("DENIED", label, type(exc).__name__)
        return None
    print(marker, label, repr(got)[:200])
    return got
'''


def with_honest(attack: str, *, in_call: str = "") -> str:
    """An honest solution whose module runs ``attack`` at import and ``in_call`` in every call."""
    body = "\n".join("    " + line for line in in_call.strip().splitlines()) if in_call.strip() else "    pass"
    return (HONEST_AS_IMPL + PROBE + attack + "\n\n_calls = [0]\n"
            "def _hostile_call():\n" + body + "\n\n"
            "def compute_actor_loss(*args, **kwargs):\n"
            "    _calls[0] += 1\n"
            "    _hostile_call()\n"
            "    return _honest(*args, **kwargs)\n")


# -- time ------------------------------------------------------------------------------------
LOOP_AT_IMPORT = "while True:\n    pass\n"
LOOP_IN_CALL = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    while True:\n        pass\n"
SLEEP_IN_CALL = "import time\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    time.sleep(3600)\n"
SLEEPING_THREADS = with_honest('''
import threading, time
for _ in range(8):
    threading.Thread(target=time.sleep, args=(3600,)).start()   # non-daemon: never ends
''', in_call="threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()")
BUSY_THREADS_IGNORING_SIGXCPU = '''
import signal, threading
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin).start()
def compute_actor_loss(a, b, c, clip_range=0.2):
    spin()
'''
STOP_SELF = "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n" + HONEST

# -- memory ----------------------------------------------------------------------------------
MEMORY_PYTHON_OBJECTS = "hoard = []\nwhile True:\n    hoard.append('x' * (1 << 20))\n"
MEMORY_PYTHON_INTS_IN_CALL = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    return list(range(10**10))\n"
MEMORY_TENSOR = "import torch\nhoard = [torch.ones(1 << 28) for _ in range(64)]\n" + HONEST
MEMORY_TENSOR_ABSURD = "import torch\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    return torch.ones(1 << 42)\n"
HUGE_RETURNED_TENSOR = '''
import torch
_calls = []
def compute_actor_loss(a, b, c, clip_range=0.2):
    _calls.append(1)
    if len(_calls) == 1:
        return torch.ones(4_000_000)   # 16 MB: over the 8 MiB output limit, under the memory limit
    return a.sum()
'''

# -- processes -------------------------------------------------------------------------------
FORK_BOMB = "import os\nwhile True:\n    os.fork()\n"
BACKGROUND_PROCESSES = with_honest('''
import os, subprocess, multiprocessing, sys
def double_fork():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time; time.sleep(3600)
        os._exit(0)
    return "forked"
_try("os.fork", double_fork, "ESCAPED")
_try("subprocess", lambda: subprocess.Popen(["/bin/sleep", "3600"]).pid, "ESCAPED")
_try("os.system", lambda: os.system("sleep 3600 &") == 0 or 1 / 0, "ESCAPED")   # 127: could not start
_try("posix_spawn", lambda: os.posix_spawn("/bin/sleep", ["sleep", "3600"], {{}}), "ESCAPED")
_try("setsid", os.setsid, "ESCAPED")
_try("multiprocessing", lambda: multiprocessing.get_context("fork").Process(target=sys.exit).start() or "started", "ESCAPED")
_try("execv", lambda: os.execv("/bin/sleep", ["sleep", "3600"]), "ESCAPED")
''', in_call='_try("fork in call", os.fork, "ESCAPED")')

# -- network ---------------------------------------------------------------------------------
NETWORK = with_honest('''
import socket
for port in {ports}:
    _try(f"connect {{port}}", lambda: socket.create_connection(("127.0.0.1", port), timeout=0.5).getpeername())
_try("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53)))
_try("unix", lambda: socket.socket(socket.AF_UNIX).connect("/run/systemd/private"))
_try("socketpair", socket.socketpair)
_try("interfaces", lambda: socket.if_nameindex())
''')

# -- reading what is not ours ----------------------------------------------------------------
SNOOP = with_honest('''
import os, glob, sys
print("ENV", sorted(os.environ.items()))
for path in {paths}:
    _try(f"read {{path}}", lambda: open(path, "rb").read(200))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for what in ("environ", "cmdline", "maps", "mem"):
            data = _try(f"/proc/{{pid}}/{{what}}", lambda: open(f"/proc/{{pid}}/{{what}}", "rb").read(4096) if what != "mem" else open(f"/proc/{{pid}}/mem", "rb").read(1), "READ")
            if data and b"{canary}" in data:  # the canary is set in the grader's environment
                print("LEAK canary in", pid, what)
_try("import exercises", lambda: __import__("exercises"))
_try("import server", lambda: __import__("server"))
_try("import exercises.actor_loss.reference", lambda: __import__("exercises.actor_loss.reference"))
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr")]
    if root == "/jail/site":
        dirs[:] = [d for d in dirs if not d.startswith(("torch", "nvidia", "triton", "sympy", "numpy"))]
    found += [os.path.join(root, f) for f in files
              if (f in ("reference.py", "mutants.py", "checks.py") and ("exercises" in root or "actor_loss" in root))
              or f in ("pyproject.toml", "DESIGN.md") or f.endswith((".db", ".sqlite"))]
print("LEAK server files" if found else "DENIED no reference, exercise or database file anywhere", found[:5])
''', in_call='print("CALLENV", dict(os.environ))')

# Runs first, leaving traces for the next job; the second job looks for them.
LEAVE_TRACES = with_honest('''
import os
secret = "{token}"   # the "other learner's" source contains this token
job_dir = os.path.dirname(os.getcwd())
seq = int(os.path.basename(job_dir).rsplit("-", 1)[-1]) if "-" in os.path.basename(job_dir) else 0
open("/tmp/{marker}-left-in-tmp", "w").write(secret)
for ahead in range(1, 6):
    # plant a folder and files where the next jobs will be set up
    nxt = os.path.join(os.path.dirname(job_dir), f"job-{{seq + ahead}}")
    try:
        os.makedirs(os.path.join(nxt, "tmp"), exist_ok=True)
        open(os.path.join(nxt, "result.json"), "w").write('{{"status": "ok", "calls": []}}')
        os.symlink("/proc/self/environ", os.path.join(nxt, "tmp", "submission.py"))
    except OSError:
        pass
''')
FIND_TRACES = with_honest('''
import os
# the token in two halves that never meet in this module's own text or memory
HEAD = "{token_head}".encode()
TAIL = "{token_tail}".encode()
def holds_token(data):
    i = data.find(HEAD)
    while i >= 0:
        if data[i + len(HEAD): i + len(HEAD) + len(TAIL)] == TAIL:
            return True
        i = data.find(HEAD, i + 1)
    return False
hits = []
for root, dirs, files in os.walk("/tmp"):
    for f in files:
        try:
            if holds_token(open(os.path.join(root, f), "rb").read()):
                hits.append(os.path.join(root, f))
        except OSError:
            pass
print("LEAK files of another job:" if hits else "DENIED no file of another job", hits)
print("TMP", sorted(os.listdir("/tmp")))
# the other learner's source in memory inherited from the fork-server? Python objects first,
# then raw memory where /proc still lists it (a job sees no /proc: that scan is refused).
import gc
found = any(isinstance(o, (str, bytes)) and holds_token(o.encode() if isinstance(o, str) else o)
            for o in gc.get_objects())
try:
    maps = open("/proc/self/maps")
except OSError:
    print("DENIED no /proc to scan memory through")
    regions = []
else:
    with maps:
        regions = [l.split() for l in maps]
with (open("/proc/self/mem", "rb", buffering=0) if regions else open(os.devnull, "rb")) as mem:
    for r in regions:
        if "r" not in r[1] or (len(r) > 5 and r[5].startswith("/")):
            continue
        start, end = (int(x, 16) for x in r[0].split("-"))
        if end - start > (1 << 30) or (len(r) > 5 and r[5] in ("[vvar]", "[vsyscall]")):
            continue
        try:
            mem.seek(start)
            if holds_token(mem.read(end - start)):
                found = True
                break
        except (OSError, OverflowError, ValueError):
            pass
print("LEAK another job's source in memory" if found else "DENIED no other source in memory")
''')

# -- writing ---------------------------------------------------------------------------------
WRITE_OUTSIDE = with_honest('''
import os
for d in {dirs}:
    _try(f"write {{d}}", lambda: open(os.path.join(d, "{marker}"), "w").write("x"), "ESCAPED")
    _try(f"mkdir {{d}}", lambda: os.mkdir(os.path.join(d, "{marker}-dir")), "ESCAPED")
_try("write private tmp", lambda: open("/tmp/{marker}", "w").write("fine"), "OK")
''')
FILL_DISK_ONE_FILE = with_honest('''
with open("/tmp/fill", "wb") as fh:
    while True:
        fh.write(b"x" * (1 << 20))
''')
FILL_DISK_MANY_FILES = with_honest('''
import os
n = 0
try:
    while True:
        with open(f"/tmp/fill-{{n}}", "wb") as fh:
            fh.write(b"x" * (4 << 20))
        n += 1
except OSError as exc:
    print("DENIED disk full after", n, "files:", exc)
''')

# -- forging a result ------------------------------------------------------------------------
FORGE_STDOUT = with_honest('''
import json, sys
fake = {{"status": "ok", "verdict": "graded", "score": 100, "calls": []}}
print(json.dumps(fake)); print(json.dumps(fake), file=sys.stderr)
print('\\x00\\x00\\x00\\x10\\x00\\x00\\x00\\x00{{"event": "exited"}}')
''')
FORGE_FDS = with_honest('''
import os, json
fake = json.dumps({{"event": "exited", "exit_code": 0, "files": {{}}, "sizes": {{}}}}).encode()
frame = len(fake).to_bytes(4, "big") + (0).to_bytes(4, "big") + fake
for fd in range(3, 21):
    _try(f"write fd {{fd}}", lambda: os.write(fd, frame), "ESCAPED")
''')
#: The job's request, from the harness's frame: its file is unlinked before the module runs
#: (review 4, finding 5), but the harness's own locals hold it while the module is imported.
REQUEST_FROM_FRAMES = '''
import sys
_f = sys._getframe()
while _f is not None and "request" not in _f.f_locals:
    _f = _f.f_back
request = {"calls": [{"id": c.id} for c in _f.f_locals["request"].calls]}
'''
FORGE_RESULT_FILE_AND_EXIT = REQUEST_FROM_FRAMES + '''
import json, os
calls = [{"id": c["id"], "output": {"type": "float", "value": 0.0}} for c in request["calls"]]
json.dump({"status": "ok", "calls": calls, "score": 100, "verdict": "graded"}, open("../result.json", "w"))
os._exit(0)
'''
FORGE_EMPTY_RESULT_AND_EXIT = '''
import os
open("../result.json", "w").write('{"status": "ok", "calls": []}')
os._exit(0)
'''
FORGE_MALFORMED_TREE = REQUEST_FROM_FRAMES + '''
import json, os
calls = [{"id": c["id"], "output": {"type": "dict", "items": [1, 2]}, "grads": {"0": 7},
          "error": None} for c in request["calls"]]
json.dump({"status": "ok", "calls": calls}, open("../result.json", "w"))
os._exit(0)
'''
FORGE_DEEP_JSON = '''
import os
open("../result.json", "w").write('{"status": "ok", "calls": ' + "[" * 100000 + "]" * 100000 + "}")
os._exit(0)
'''
KILL_PARENT = with_honest('''
import os, signal
_try("kill parent", lambda: os.kill(os.getppid(), signal.SIGKILL), "ESCAPED")
_try("kill -1", lambda: os.kill(-1, signal.SIGKILL), "ESCAPED")
_try("kill pid 1", lambda: os.kill(1, signal.SIGKILL), "ESCAPED")
_try("killpg parent", lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL), "ESCAPED")
for pid in range(1, 64):
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
            print("ESCAPED killed", pid)
        except OSError:
            pass
print("DENIED no other process killed")
''')
SIGNAL_TRICKS = with_honest('''
import signal
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
''', in_call="while True:\n    pass")
SELF_SIGKILL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
EXIT_ZERO_AT_IMPORT = "import os\nos._exit(0)\n"

# -- monkey-patching -------------------------------------------------------------------------
PATCH_HARNESS = '''
import json, sys
import sandbox.harness as h
real_dump = json.dump
def fake_dump(obj, fh, *a, **k):
    if isinstance(obj, dict) and "calls" in obj:
        for c in obj["calls"]:
            c.pop("error", None)
            c["output"] = {"type": "float", "value": 0.0}
    obj["score"] = 100
    return real_dump(obj, fh, *a, **k)
json.dump = fake_dump
h.json.dump = fake_dump
h._error = lambda exc, filename, phase: None
def compute_actor_loss(a, b, c, clip_range=0.2):
    return 0.0
'''
PATCH_TORCH_AND_BUILTINS = HONEST_AS_IMPL + '''
import builtins, torch
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: True
torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)
builtins.isinstance = lambda obj, cls: True
builtins.open = None
def compute_actor_loss(a, b, c, clip_range=0.2):
    return torch.zeros(())
'''
FAKE_TENSOR = '''
import torch
class Liar:
    """Claims to be a tensor and equal to anything."""
    __class__ = property(lambda self: torch.Tensor)
    dtype = torch.float32
    shape = torch.Size([])
    device = torch.device("cpu")
    requires_grad = True
    layout = torch.strided
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def is_complex(self): return False
    is_quantized = False
    def __float__(self): return 0.0
def compute_actor_loss(a, b, c, clip_range=0.2):
    return Liar()
'''
LYING_SUBCLASS = HONEST_AS_IMPL + '''
import torch
class Liar(torch.Tensor):
    def __eq__(self, other): return True
    def allclose(self, *a, **k): return True
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {{}})
def compute_actor_loss(a, b, c, clip_range=0.2):
    return torch.zeros(()).as_subclass(Liar)
'''.replace("{{}}", "{}")
NAN_RESULT = "import torch\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    return (a * float('nan')).mean()\n"
INF_RESULT = "import torch\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    return (a.sum() * 0 + float('inf'))\n"
NAN_FLOAT = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    return float('nan')\n"

# -- crashes ---------------------------------------------------------------------------------
SEGFAULT = "import ctypes\nctypes.string_at(0)\n"
SEGFAULT_IN_CALL = "import ctypes\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    ctypes.string_at(0)\n"
RECURSION = "def f(n):\n    return f(n + 1)\nf(0)\n"
RECURSION_C_STACK = '''
import sys
sys.setrecursionlimit(10**7)
def f(n):
    return f(n + 1)
def compute_actor_loss(a, b, c, clip_range=0.2):
    return f(0)
'''
SYSTEM_EXIT_AT_IMPORT = "raise SystemExit(0)\n"
SYSTEM_EXIT_IN_CALL = "import sys\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    sys.exit(0)\n"
KEYBOARD_INTERRUPT_AT_IMPORT = "raise KeyboardInterrupt\n"
KEYBOARD_INTERRUPT_IN_CALL = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    raise KeyboardInterrupt\n"

# -- output ----------------------------------------------------------------------------------
HUGE_STDOUT = "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n"
HUGE_STDERR = "import sys\nwhile True:\n    sys.stderr.write('z' * 65536)\n"
BIG_BUT_ALLOWED_OUTPUT = "import sys\nprint('FIRST LINE')\nsys.stdout.write('w' * (2 << 20))\nprint('\\nLAST LINE')\n" + HONEST

# -- malformed sources -----------------------------------------------------------------------
SYNTAX_ERROR = "import torch\n\ndef compute_actor_loss(a, b, c, clip_range=0.2)\n    return a\n"
NO_FUNCTION = "import torch\n\ndef actor_loss(a, b, c):\n    return a.mean()\n"
NOT_CALLABLE = "compute_actor_loss = 42\n"
LONE_SURROGATE = "x = '\\ud800'\n".encode().decode("unicode_escape") + HONEST
NUL_BYTES = "x = 1\x00\n" + HONEST
