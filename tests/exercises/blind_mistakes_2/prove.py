"""Prove that every labelled mistake of the blind corpus changes what the contract fixes.

    .venv/bin/python tests/exercises/blind_mistakes_2/prove.py [-v] [slug ...]

1. Every correct file under correct/ passes its starter's self-tests and every general probe of
   probes.py (the probes are written from the contract; the correct files are independent
   solutions in several styles, so each checks the other).
2. The files under dev/ and heldout/ are exactly what build.py makes from corpus_spec.py (each
   a correct file with its mistakes' edits), labels.json is exactly its labels, and every wrong
   file keeps the starter's function name and signature.
3. Each mistake, applied alone to its correct file, fails every probe it is listed with, while
   the correct file passes them: for a compound file, each mistake is shown on its own.
4. Every wrong file, with all its mistakes together, fails at least one probe.

Exits 1, naming what went wrong, if any of this does not hold.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import pathlib
import sys
import time
import types
import warnings

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

import build  # noqa: E402
import corpus_spec  # noqa: E402
import probes  # noqa: E402

STARTER_DIRS = {slug: slug.replace("-", "_") for slug in build.FUNCTIONS}


def load(source: str, name: str, as_main: bool = False):
    module = types.ModuleType("__main__" if as_main else "blind_corpus_file")
    module.__file__ = name
    exec(compile(source, name, "exec"), module.__dict__)  # our own corpus files
    return module


def run_probe(slug: str, probe: str, source: str, name: str) -> str | None:
    """None when the probe passes on a fresh copy of the file, else why it failed."""
    fn = getattr(load(source, name), build.FUNCTIONS[slug])
    try:
        probes.CHECKS[slug][probe](fn)
    except probes.Fail as exc:
        return str(exc)
    return None


class Proof:
    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.problems: list[str] = []
        self.proven = 0

    def problem(self, text: str) -> None:
        self.problems.append(text)
        print(f"PROBLEM {text}", flush=True)

    def say(self, text: str) -> None:
        if self.verbose:
            print(text, flush=True)


def starter_signature(slug: str) -> inspect.Signature:
    path = ROOT / "exercises" / STARTER_DIRS[slug] / "starter.py"
    return inspect.signature(getattr(load(path.read_text(), str(path)), build.FUNCTIONS[slug]))


def check_correct(proof: Proof, slug: str) -> None:
    for path in sorted((HERE / "correct" / slug).glob("*.py")):
        source = path.read_text()
        name = str(path.relative_to(HERE))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                load(source, name, as_main=True)
        except Exception as exc:
            proof.problem(f"{name}: self-tests failed: {type(exc).__name__}: {exc}")
        for probe in sorted(probes.GENERAL[slug]):
            why = run_probe(slug, probe, source, name)
            if why is not None:
                proof.problem(f"{name}: correct file fails {probe}: {why}")
        proof.say(f"ok  {name}: self-tests and {len(probes.GENERAL[slug])} probes pass")


def check_files(proof: Proof, slugs: list[str]) -> None:
    on_disk = {str(p.relative_to(HERE)) for half in ("dev", "heldout") for p in (HERE / half).rglob("*.py")}
    expected = {rel for slug, _n, _b, _m, rel, _t, _l in build.corpus()}
    for rel in sorted(on_disk - expected):
        proof.problem(f"{rel}: on disk but not in corpus_spec.py")
    for rel in sorted(expected - on_disk):
        proof.problem(f"{rel}: in corpus_spec.py but not on disk")
    labels = json.loads((HERE / "labels.json").read_text())
    if labels != build.labels():
        proof.problem("labels.json differs from what build.py makes of corpus_spec.py")
    for slug, _number, _base, _mistakes, rel, text, _lines in build.corpus():
        if slug not in slugs or rel not in on_disk:
            continue
        if (HERE / rel).read_text() != text:
            proof.problem(f"{rel}: differs from its correct file plus its mistakes' edits")
        fn = getattr(load(text, rel), build.FUNCTIONS[slug], None)
        if fn is None or inspect.signature(fn) != starter_signature(slug):
            proof.problem(f"{rel}: does not define {build.FUNCTIONS[slug]} with the starter's signature")


def check_mistakes(proof: Proof, slugs: list[str]) -> None:
    for slug, _number, base, mistakes, rel, text, _lines in build.corpus():
        if slug not in slugs:
            continue
        base_source = build.base_text(slug, base)
        base_name = f"correct/{slug}/{base}"
        for m in mistakes:
            variant = build.single_variant(slug, base, m)
            for probe in m["checks"]:
                if probe not in probes.CHECKS[slug]:
                    proof.problem(f"{rel} {m['id']}: unknown probe {probe}")
                    continue
                if probe not in probes.GENERAL[slug]:
                    why = run_probe(slug, probe, base_source, base_name)
                    if why is not None:
                        proof.problem(f"{base_name}: fails the targeted probe {probe}: {why}")
                        continue
                why = run_probe(slug, probe, variant, f"{rel} [{m['id']} alone]")
                if why is None:
                    proof.problem(f"{rel} {m['id']}: applied alone, it still passes {probe}")
                else:
                    proof.proven += 1
                    proof.say(f"ok  {rel} {m['id']} alone fails {probe}: {why}")
        listed = [p for m in mistakes for p in m["checks"]]
        order = list(dict.fromkeys(listed + sorted(probes.GENERAL[slug])))
        for probe in order:
            why = run_probe(slug, probe, text, rel)
            if why is not None:
                proof.say(f"ok  {rel} as written fails {probe}: {why}")
                break
        else:
            proof.problem(f"{rel}: the whole file passes every probe")


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")
    verbose = "-v" in argv
    slugs = [a for a in argv if not a.startswith("-")] or list(corpus_spec.FILES)
    proof = Proof(verbose)
    start = time.time()
    for slug in slugs:
        check_correct(proof, slug)
    check_files(proof, slugs)
    check_mistakes(proof, slugs)
    n_files = sum(1 for s, *_ in build.corpus() if s in slugs)
    n_mistakes = sum(len(m) for s, _n, _b, m, *_ in build.corpus() if s in slugs)
    print(
        f"{n_files} wrong files, {n_mistakes} mistakes, {proof.proven} mistake/probe failures shown, "
        f"{len(proof.problems)} problems ({time.time() - start:.0f} s)"
    )
    return 1 if proof.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
