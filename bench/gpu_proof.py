"""One prepared script for a lent GPU machine: the GPU paths, end to end, in about a minute.

Proves that (1) CUDA works inside the bubblewrap jail with /dev/nvidia* bound in and the host
never initialising CUDA, (2) every exercise's reference scores 100 on CUDA tensors and a
mutant is still caught and named, (3) the memory check reports peak GPU memory (from the
child's CUDA allocator) for actor-loss and gae, and the O(T^2) GAE mutant fails it.

    .venv/bin/python bench/gpu_proof.py     # prints a table; exits 1 if any line fails
    .venv/bin/python bench/gpu_proof.py --device cpu --exercises actor-loss   # the same script, no GPU
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from exercises.judge import Judge  # noqa: E402
from exercises.registry import all_exercises  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (the proof) or cpu (the script itself, anywhere)")
    parser.add_argument("--exercises", help="comma-separated slugs (default: all); gae adds its memory mistakes")
    args = parser.parse_args()
    if args.device == "cuda" and not Path("/dev/nvidiactl").exists():
        print("no NVIDIA device here: nothing to prove")
        return 1
    assert not torch.cuda.is_initialized(), "the trusted process must not hold a CUDA context before forking"
    chosen = all_exercises() if args.exercises is None else [e for e in all_exercises() if e.slug in args.exercises.split(",")]
    judge = Judge(secret=b"gpu-proof-" + b"x" * 22, pool_size=1, device=args.device)
    ok = bool(chosen)
    try:
        for ex in chosen:
            t0 = time.perf_counter()
            ref = judge.grade(ex.slug, ex.reference_source, 1)
            plain = [m for m in ex.mistakes if not m.is_memory][0]
            bad = judge.grade(ex.slug, plain.source(ex.function_name), 1)
            named = any(c.mistake_id == plain.id for c in bad.checks if not c.passed)
            line_ok = ref.score == 100 and named
            ok &= line_ok
            failed = [(c.name, c.message[:160]) for c in ref.checks if not c.passed]
            print(f"{ex.slug:18} ref={ref.score} ({ref.verdict}) mistake {plain.id}={bad.score} named={named} "
                  f"peak={ref.peak_memory_bytes} {time.perf_counter() - t0:.2f}s {'' if line_ok else failed}")
        gae = next(e for e in all_exercises() if e.slug == "gae")
        for m in (m for m in gae.mistakes if m.is_memory and gae in chosen):
            r = judge.grade("gae", m.source(gae.function_name), 2)
            mem = [c for c in r.checks if c.name.startswith("peak memory")]
            print(f"memory mistake {m.id}: score={r.score} memory check passed={mem[0].passed} :: {mem[0].message[:200]}")
            ok &= not mem[0].passed
    finally:
        judge.close()
    print(f"GPU PROOF ({args.device})", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
