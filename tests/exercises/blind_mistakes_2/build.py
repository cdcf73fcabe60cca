"""Write the blind corpus's wrong files and labels.json from corpus_spec.py.

    .venv/bin/python tests/exercises/blind_mistakes_2/build.py

Each wrong file is its correct file with the edits of its mistakes applied; the split into
dev/ and heldout/ is fixed by `half()` below (one file of each authored pair to each half,
chosen by a hash of the exercise and the pair's number), decided before any result was read.
prove.py imports the same functions to check that the files on disk are exactly these.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus_spec  # noqa: E402

FUNCTIONS = {
    "actor-loss": "compute_actor_loss",
    "masked-actor-loss": "compute_masked_actor_loss",
    "gae": "compute_gae",
    "critic-loss": "compute_critic_loss",
    "token-rewards": "compute_token_rewards",
    "pairwise-loss": "compute_pairwise_loss",
    "whiten": "masked_whiten",
    "kl-penalty": "compute_kl_penalty",
    "grpo-advantages": "compute_grpo_advantages",
    "dpo-loss": "compute_dpo_loss",
    "ppo-memory": "estimate_ppo_memory",
}


def half(slug: str, number: int) -> str:
    """'dev' or 'heldout': files 2k-1 and 2k form pair k; the hash picks which one is dev."""
    pair = (number - 1) // 2
    first_is_dev = hashlib.sha256(f"{slug}:{pair}".encode()).digest()[0] % 2 == 0
    is_first = number % 2 == 1
    return "dev" if is_first == first_is_dev else "heldout"


def rel_path(slug: str, number: int) -> str:
    return f"{half(slug, number)}/{slug}/sub{number:02d}.py"


def base_text(slug: str, base: str) -> str:
    return (HERE / "correct" / slug / base).read_text()


def apply_edits(text: str, edits: list[tuple[str, str, int]]) -> tuple[str, dict[int, int]]:
    """Apply (old, new, owner) edits; each old must occur once, and no two may overlap.

    Returns the new text and, per owner, the 1-based line where its first edit lands.
    """
    spans = []
    for old, new, owner in edits:
        count = text.count(old)
        if count != 1:
            raise ValueError(f"edit of mistake {owner}: {old[:60]!r} occurs {count} times")
        start = text.index(old)
        spans.append((start, start + len(old), new, owner))
    spans.sort()
    for (_, e1, _, _), (s2, _, _, _) in itertools.pairwise(spans):
        if s2 < e1:
            raise ValueError("overlapping edits")
    out, pos, first = [], 0, {}
    length = 0
    for start, end, new, owner in spans:
        out.append(text[pos:start])
        length += start - pos
        lead = len(new) - len(new.lstrip())
        where = length + (lead if new.strip() else 0)
        if owner not in first:
            first[owner] = where
        out.append(new)
        length += len(new)
        pos = end
    out.append(text[pos:])
    result = "".join(out)
    lines = {owner: result.count("\n", 0, where) + 1 for owner, where in first.items()}
    return result, lines


def build_file(slug: str, base: str, mistakes: list[dict]) -> tuple[str, dict[int, int]]:
    edits = [(old, new, i) for i, m in enumerate(mistakes) for old, new in m["edits"]]
    try:
        return apply_edits(base_text(slug, base), edits)
    except ValueError as exc:
        raise ValueError(f"{slug} from {base} with {[m['id'] for m in mistakes]}: {exc}") from None


def single_variant(slug: str, base: str, mistake: dict) -> str:
    return apply_edits(base_text(slug, base), [(old, new, 0) for old, new in mistake["edits"]])[0]


def defines_function(source: str, name: str) -> bool:
    tree = ast.parse(source)
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def corpus():
    """Yield (slug, number, base, mistakes, relative path, text, lines) for every wrong file."""
    for slug, files in corpus_spec.FILES.items():
        for number, (base, mistakes) in enumerate(files, start=1):
            text, lines = build_file(slug, base, mistakes)
            yield slug, number, base, mistakes, rel_path(slug, number), text, lines


def labels() -> dict[str, list[dict]]:
    out = {}
    for _slug, _number, _base, mistakes, rel, _text, lines in corpus():
        out[rel] = [
            {"id": m["id"], "family": m["family"], "what": m["what"], "line": lines[i]} for i, m in enumerate(mistakes)
        ]
    return dict(sorted(out.items()))


def main() -> None:
    for half_dir in ("dev", "heldout"):
        shutil.rmtree(HERE / half_dir, ignore_errors=True)
    for slug, _number, base, mistakes, rel, text, _lines in corpus():
        if not defines_function(text, FUNCTIONS[slug]):
            raise SystemExit(f"{rel}: does not define {FUNCTIONS[slug]}")
        for m in mistakes:
            single_variant(slug, base, m)
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (HERE / "labels.json").write_text(json.dumps(labels(), indent=1) + "\n")
    print(f"wrote {sum(1 for _ in corpus())} wrong files and labels.json")


if __name__ == "__main__":
    main()
