"""Attacks of issue 19 (the third white-box review), as source strings for gae and token-rewards.

Templates use ``{name}`` placeholders; literal braces are doubled.
"""

from __future__ import annotations

#: Writes the harness's result files itself: one large tensor, named ``copies`` times by every
#: call's output tree (the harness never names a tensor twice), then ends the process.
FORGE_ONE_TENSOR_NAMED_MANY_TIMES = '''
import json, os, torch
from safetensors.torch import save_file
request = json.load(open("../request.json"))
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
