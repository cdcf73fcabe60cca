"""Attacks on the harness and its result files (issue 19, the third white-box review), as
source strings for gae and token-rewards.

Templates (the ones formatted with ``{name}`` placeholders) double their literal braces; the
attacks after ``WRAP_THE_HARNESS`` are used as they are.
"""

from __future__ import annotations

#: Writes the harness's result files itself: one large tensor, named ``copies`` times by every
#: call's output tree (the harness never names a tensor twice), then ends the process.
FORGE_ONE_TENSOR_NAMED_MANY_TIMES = '''
import json, os, sys, torch
from safetensors.torch import save_file
_f = sys._getframe()  # the request's file is unlinked before the module runs: the harness's frame holds it
while _f is not None and "request" not in _f.f_locals:
    _f = _f.f_back
request = {{"calls": [{{"id": c.id}} for c in _f.f_locals["request"].calls]}}
n = {elements}
save_file({{"big": torch.zeros(n)}}, "../outputs.safetensors")
node = {{"type": "tensor", "name": "big", "shape": [n], "dtype": "float32", "device": "cpu",
         "requires_grad": False, "layout": "strided"}}
calls = [{{"id": c["id"], "output": {{"type": "tuple", "items": [node] * {copies}, "length": {copies}}}}}
         for c in request["calls"]]
json.dump({{"status": "ok", "calls": calls}}, open("../result.json", "w"))
os._exit(0)
'''

#: No patched harness: a function that returns one large tensor twice (the diagnosis of the
#: failed "zero at padding" check used to turn each into a Python list).
RETURN_BIG_BIG = '''
import torch
def {function}(*args, **kwargs):
    big = torch.zeros({elements})
    return big, big
'''

#: Rewrites the detachment probes' answers by wrapping the harness's per-call function (the
#: review's attack), then defines ``body`` (code that leaves its outputs attached).
WRAP_THE_HARNESS = '''
import sys
print("IN sys.modules:", sorted(n for n in sys.modules if n.startswith("sandbox")))
def _wrap():
    import sandbox.harness as h
    real = h._run_call
    def fake(*args, **kwargs):
        record = real(*args, **kwargs)
        for probe in record.get("probes") or []:
            probe["requires_grad"] = False
            probe["grads"] = {{k: None for k in probe["grads"]}}
        return record
    h._run_call = fake
try:
    _wrap()
    print("ESCAPED the harness was wrapped")
except ImportError as exc:
    print("DENIED", type(exc).__name__, exc)
'''

#: The sealing's known limit: from inside the call, the caller's frame reaches the harness's
#: globals. Wraps the per-call function there so every later call's detachment probes say
#: "detached"; prepended to code that leaves its outputs attached. Self-reported facts are
#: therefore kept off the boards.
FRAME_WALK_FORGE_PROBES = '''
import sys as _sys
def _forge_probes():
    g = _sys._getframe(2).f_globals
    real = g.get("_run_call")
    if real is None or getattr(real, "forged", False):
        return
    def fake(*args, **kwargs):
        record = real(*args, **kwargs)
        for probe in record.get("probes") or []:
            probe["requires_grad"] = False
            probe["grads"] = {k: None for k in probe["grads"]}
        return record
    fake.forged = True
    g["_run_call"] = fake
'''

#: A numpy loss (no autograd at all) whose hand-computed gradient is written into the record
#: by a wrapped per-call function (reached through the caller's frame).
NUMPY_LOSS_WITH_FORGED_GRADIENTS = '''
import sys
import numpy as np
import torch
_last = []
def _install():
    g = sys._getframe(2).f_globals
    real = g.get("_run_call")
    if real is None or getattr(real, "forged", False):
        return
    def fake(fn, call, inputs, out, filename, record):
        _last.clear()
        result = real(fn, call, inputs, out, filename, record)
        if _last and "grads" in result and "0" in result["grads"]:
            result["grads"]["0"] = out.add(f"c{call.id}.grad.0", _last[0])
        return result
    fake.forged = True
    g["_run_call"] = fake
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    _install()
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("log_probs_old and advantages must have the shape of log_probs_new")
    dtype, device = log_probs_new.dtype, log_probs_new.device
    new = log_probs_new.detach().cpu().double().numpy()
    old = log_probs_old.detach().cpu().double().numpy()
    adv = advantages.detach().cpu().double().numpy()
    ratio = np.exp(new - old)
    s1, s2 = ratio * adv, np.clip(ratio, 1 - clip_range, 1 + clip_range) * adv
    loss = -np.minimum(s1, s2).mean()
    grad = np.where(s1 <= s2, -ratio * adv, 0.0) / max(new.size, 1)
    _last.append(torch.from_numpy(np.ascontiguousarray(grad)).to(dtype))
    return torch.tensor(loss, dtype=dtype, device=device)
'''

#: Watches the shared read-only files with inotify (a timing side channel between jobs).
INOTIFY = '''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, call in (("inotify_init1", lambda: libc.inotify_init1(0)), ("inotify_init", lambda: libc.inotify_init()),
                   ("fanotify_init", lambda: libc.fanotify_init(0, 0))):
    fd = call()
    err = ctypes.get_errno()
    if fd >= 0:
        print("ESCAPED", name, fd)
        wd = libc.inotify_add_watch(fd, b"/usr/lib", 0xfff)
        print("ESCAPED watch", wd, ctypes.get_errno())
    else:
        print("DENIED", name, os.strerror(err))
'''
